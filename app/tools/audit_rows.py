"""One chat's tool calls as a person reads them, from the tool audit: Qt-free, so the window's
Tool calls view and `harmony-desk tools audit --format md` say the same.

The audit (`app/tools/audit.py`) keeps every call a turn ran or refused, whoever drove it. This
module turns one conversation's entries into rows.

Guarantees: `rows_of(entries, servers)` makes one `CallRow` per entry, oldest first: the tool
by its readable name (`app/domain/tool_names.py`) and by the name the model called it by, the
local time the call was recorded, the arguments the model sent and those that ran (with
whether the user edited them), the decision and who made it in words (`approver`), the outcome
with its duration, and the whole result or the error; an entry missing a field still makes a
row (the field said as unknown), never an exception. `read_calls` reads one conversation's rows
now (it blocks: the window reads off its GUI thread); `configured_servers` never raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.domain.tool_names import readable
from app.errors import HarmonyDeskError
from app.tools.audit import AuditLog, whole_of

# what the audit's decision says → who decided, in words (the first matching prefix wins)
_APPROVERS = (
    ("asked: deny from now on", "You, when asked (Never: denied from now on)"),
    ("asked: always allow", "You, when asked (Always allow)"),
    ("asked: allow for this conversation", "You, when asked (Allow in this chat)"),
    ("asked: allowed", "You, when asked (Run)"),
    ("asked: denied", "You, when asked (Deny)"),
    ("allow for this conversation", "Your earlier choice: allowed in this chat"),
    ("always allow", "Your saved choice: always allowed"),
    ("denied by policy", "Your saved choice: never allowed"),
    ("allowed without asking", "Nobody: this tool runs without asking"),
    ("stopped by the user", "You stopped the answer before it ran"),
)


@dataclass(frozen=True)
class CallRow:
    """One tool call as the view shows it."""

    when: str  # local time, "2026-11-28 14:23:44"
    tool: str  # readable: "get_current_time · time"
    called: str  # as the model called it: "functions.time__get_current_time"
    sent: str  # the arguments the model sent (pretty JSON when they are JSON)
    ran: str  # the arguments that ran (the user's edits included)
    edited: bool
    decision: str  # as the audit says it: "asked: allowed, arguments edited"
    approver: str  # who decided, in words
    ok: bool
    outcome: str  # "Done in 0.02 s", "Failed: E-TOOL-DENIED", "Denied"
    result: str  # the whole result, or the error's message

    def details(self) -> str:
        """The call written out whole, for its detail pane (and to copy)."""
        parts = [
            f"{self.tool}  (the model called it {self.called})",
            f"When: {self.when}",
            f"Decided by: {self.approver}  [{self.decision}]",
            f"Outcome: {self.outcome}",
            "",
            "Arguments the model sent:",
            self.sent,
        ]
        if self.edited:
            parts += ["", "Arguments that ran (edited):", self.ran]
        parts += ["", "Result:" if self.ok else "Error:", self.result]
        return "\n".join(parts)


@dataclass(frozen=True)
class CallsRead:
    """What one read of the audit gave: the rows, lines skipped, and why it failed ("")."""

    conversation: str
    rows: tuple[CallRow, ...] = ()
    damaged: int = 0
    problem: str = ""


def _pretty(value: Any) -> str:
    """Arguments as indented JSON (a string holding JSON is read first)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, ensure_ascii=False, indent=1) if value is not None else "(unknown)"


def _local(stamp: Any) -> str:
    try:
        return datetime.fromisoformat(str(stamp)).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return str(stamp or "(unknown)")


def approver(decision: str) -> str:
    """Who decided a call, in words, from what the audit's decision says."""
    for prefix, words in _APPROVERS:
        if decision.startswith(prefix):
            return words
    return decision or "(not recorded)"


def _outcome(entry: dict[str, Any]) -> str:
    error = entry.get("error")
    code = str(error.get("code") or "") if isinstance(error, dict) else ""
    ms = entry.get("duration_ms")
    took = f" in {ms / 1000:.2f} s" if isinstance(ms, int | float) else ""
    if entry.get("ok"):
        return f"Done{took}"
    if code == "E-TOOL-DENIED":
        return "Denied"
    return f"Failed{took}: {code}" if code else f"Failed{took}"


def row_of(entry: dict[str, Any], servers: Iterable[str] = ()) -> CallRow:
    """One audit entry as a row (see the module guarantees)."""
    called = str(entry.get("tool") or "?")
    sent, ran = _pretty(entry.get("arguments_sent")), _pretty(entry.get("arguments_run"))
    decision = str(entry.get("decision") or "")
    return CallRow(
        when=_local(entry.get("time")),
        tool=readable(called, servers=servers),
        called=called,
        sent=sent,
        ran=ran,
        edited=sent != ran and entry.get("arguments_run") is not None,
        decision=decision,
        approver=approver(decision),
        ok=bool(entry.get("ok")),
        outcome=_outcome(entry),
        result=whole_of(entry),
    )


def rows_of(entries: Iterable[dict[str, Any]], servers: Iterable[str] = ()) -> list[CallRow]:
    """One row per entry, in the audit's order (oldest first)."""
    known = tuple(servers)
    return [row_of(e, known) for e in entries]


def configured_servers() -> tuple[str, ...]:
    """The names of the user's MCP servers (to name their tools); () when none can be read."""
    from app.tools.mcp.config import load_servers  # the settings file: only when the view opens

    try:
        return tuple(load_servers())
    except (OSError, HarmonyDeskError):  # the names then come from the calls' own shape
        return ()


def read_calls(
    conversation: str,
    audit: AuditLog | None = None,
    servers: Callable[[], Iterable[str]] = configured_servers,
) -> CallsRead:
    """The conversation's calls, read from the audit now (blocks: see `ToolCallsView`)."""
    read = (audit or AuditLog()).read(conversation)
    return CallsRead(conversation, tuple(rows_of(read.entries, servers())), read.damaged_lines)


__all__ = [
    "CallRow",
    "CallsRead",
    "approver",
    "configured_servers",
    "read_calls",
    "row_of",
    "rows_of",
]
