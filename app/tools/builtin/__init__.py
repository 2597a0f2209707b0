"""Built-in tools, written against `app.tools.api` like any plugin."""
