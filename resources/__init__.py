"""Data files bundled with Harmony Desk, reached only through `app.resources`."""
