"""OpenAI's embeddings API over the server's embedding model: `routes` (attached to the app),
`wire` (its request) and `convert` (its inputs, and the vectors as OpenAI's data)."""
