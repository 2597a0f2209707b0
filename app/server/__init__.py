"""The local OpenAI-compatible server: HTTP in, the app's own turn on the one engine thread out.

No model code of its own: requests become domain conversations, generations run on the engine
thread the window (or `harmony-desk serve`) already has, and answers are what the one reply
builder made of the tokens."""
