"""OpenAI's completions API (a raw prompt continued): `routes` (attached to the app), `wire`
(its request) and `convert` (the prompt and its generation)."""
