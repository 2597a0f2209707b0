"""Widgets only: they bind to the controllers and the domain, never to the engine."""
