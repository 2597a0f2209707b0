"""The tool-call formats by name: what a template's `tool_calls` names.

Guarantees: every name maps to one format instance; `call_format(None)`, or a name with no
format here (Harmony's own, handled by its template), gives None.
"""

from __future__ import annotations

from app.templates.calls.format import CallFormat
from app.templates.calls.hermes import Hermes

FORMATS: dict[str, CallFormat] = {f.name: f for f in (Hermes(),)}


def call_format(name: str | None) -> CallFormat | None:
    """The format called `name`, None for none."""
    return FORMATS.get(name or "")
