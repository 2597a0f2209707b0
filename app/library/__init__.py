"""The model library: finding GGUF models in the models folders (and the bundled ones), the
catalogue of well-known models, the Hugging Face hub's GGUF models (`hub`), and downloads
(resumable, checked, never more than the configured number at once)."""
