"""turn."""
