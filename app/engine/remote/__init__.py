"""remote."""
