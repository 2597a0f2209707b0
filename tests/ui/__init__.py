"""The window and its widgets (`app/ui`), offscreen through the real controllers."""
