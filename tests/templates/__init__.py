"""Chat templates (`app/templates`) and the plain-text families' tool-call formats."""
