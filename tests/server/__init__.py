"""The local OpenAI- and Anthropic-compatible server (`app/server`)."""
