"""The history store: SQLite with named migrations, conversations, search, export, import."""
