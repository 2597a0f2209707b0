"""The GGUF header reader: what a model file says of itself, read without loading it."""
