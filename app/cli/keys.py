"""`harmony-desk keys set|delete NAME`: API keys in the OS keyring (never in a file)."""

from __future__ import annotations

from app.cli.endpoints import add_key_arguments as add_arguments
from app.cli.endpoints import run_keys as run

__all__ = ["add_arguments", "run"]
