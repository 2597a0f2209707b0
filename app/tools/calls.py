"""A tool call on its way to running: what the model asked for and what the user answered.

Guarantees: a `PendingCall` names a known tool with arguments that passed its schema; a
`Decision` is the whole of an approval (allowed or not, the arguments as edited, and how it was
decided, for the audit record). Plain values: the turn loop, approval, the runner and every
frontend share them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.tools.api import Tool


@dataclass(frozen=True)
class PendingCall:
    """A call the model made that names a known tool with valid arguments."""

    call_id: str
    tool: Tool
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """The user's answer to an approval request; `arguments` replaces the model's when edited."""

    allow: bool
    arguments: dict[str, Any] | None = None
    how: str = ""  # for the audit record: "asked", "allowed for this conversation", …


Approve = Callable[[PendingCall], Decision]


def allow_all(_call: PendingCall) -> Decision:
    return Decision(True, how="allowed without asking")
