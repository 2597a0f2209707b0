"""Secrets (`app/secrets.py`): API keys in the keyring, redaction, private files."""
