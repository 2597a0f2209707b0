"""Remote OpenAI-compatible endpoints, behind the same session protocol as a local model."""
