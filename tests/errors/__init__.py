"""The error tree (`app/errors.py`) and the sentences a user meets."""
