"""constrain."""
