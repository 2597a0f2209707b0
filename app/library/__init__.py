"""The model library: finding GGUF models in the models folders, the catalogue of well-known
models, and downloads (resumable, checked, never more than the configured number at once)."""
