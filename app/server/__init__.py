"""The local OpenAI-compatible (and Anthropic-compatible) server: HTTP in, the app's own turn
on the one engine thread out.

No model code of its own: requests become domain conversations, generations run on the engine
thread the window (or `harmony-desk serve`) already has, and answers are what the one reply
builder made of the tokens. One package per API (`chat`, `completions`, `responses`,
`anthropic`, `embeddings`), each with its `routes` (attached to the app by one call:
`app.py`), its `wire` (the request models) and its `convert` (the request as the app's own
`Asked`: `asked.py`, `transcript.py`); shared beside them: the route table and the guard
(`routing`, `guard`, `fallback`, `intake`, `options`, `listen`), the error (`errors`), the
served model (`served`), the answer being made and its fold (`running`, `answer`), the
pictures a client sends (`pictures`) and what is served (`about`, `invocations`)."""
