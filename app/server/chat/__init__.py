"""OpenAI's chat completions API: `routes` (attached to the app), `wire` (its request),
`convert` (the request as the app's own `Asked`), `completion` (the answer written as a
`chat.completion` or its chunks) and `choices` (`n` > 1)."""
