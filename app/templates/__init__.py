"""Chat templates: how a model family's prompts are written, with its sampling defaults."""
