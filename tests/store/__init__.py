"""The history store (`app/store`): SQLite files, exports and imports."""
