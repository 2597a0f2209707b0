"""The tool audit written to a file, for a program or a person: the one writer behind
`harmony-desk tools audit --out` and the window's Tool calls view's Export.

Guarantees: `export_calls` writes the audit's entries (all of them, or one conversation's)
atomically to `out` — as JSON (an array) or JSON Lines, the audit's own entries unchanged (it
is `AuditLog.export`), or as Markdown (`markdown`): one section per call, oldest first, with
the tool's readable name and the name the model called it by, when, who decided and the
audit's own words for it, the outcome, the arguments the model sent, those that ran when the
user edited them, and the whole result or error, each block fenced so that no text of a call
(backticks included) can end its fence early. It returns what was read (the entries and the
damaged lines skipped); a write that fails raises `OutputError` naming the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from app.fileio import write_atomic
from app.tools.audit import AuditLog, AuditRead
from app.tools.audit_rows import CallRow, rows_of

Format = Literal["json", "jsonl", "md"]
FORMATS: tuple[Format, ...] = ("json", "jsonl", "md")
_TICKS = re.compile(r"`{3,}")


def fenced(text: str, language: str = "") -> str:
    """`text` in a code fence longer than any run of backticks in it."""
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _section(number: int, row: CallRow) -> list[str]:
    lines = [
        f"## {number}. {row.tool} — {row.outcome}",
        "",
        f"- When: {row.when}",
        f"- Called as: `{row.called}`",
        f"- Decided by: {row.approver} (the audit says: {row.decision or 'nothing'})",
        "",
        "Arguments the model sent:",
        "",
        fenced(row.sent or "(none)", "json"),
    ]
    if row.edited:
        lines += ["", "Arguments that ran (edited):", "", fenced(row.ran, "json")]
    lines += ["", "Result:" if row.ok else "Error:", "", fenced(row.result), ""]
    return lines


def markdown(
    entries: Iterable[dict[str, Any]], servers: Iterable[str] = (), title: str = ""
) -> str:
    """The entries as a Markdown document a person reads (see the module guarantees)."""
    rows = rows_of(entries, servers)
    count = f"{len(rows)} call{'s' if len(rows) != 1 else ''}, oldest first"
    lines = [
        f"# Tool calls{f' — {title}' if title else ''}",
        "",
        f"{count}, from the tool audit.",
        "",
    ]
    for number, row in enumerate(rows, 1):
        lines += _section(number, row)
    return "\n".join(lines).rstrip() + "\n"


def export_calls(
    out: Path,
    *,
    log: AuditLog | None = None,
    conversation_id: str | None = None,
    fmt: Format = "jsonl",
    servers: Iterable[str] = (),
    title: str = "",
) -> AuditRead:
    """Write the (conversation's) calls to `out` in `fmt`; what was read."""
    audit = log or AuditLog()
    if fmt != "md":
        return audit.export(out, conversation_id=conversation_id, fmt=fmt)
    read = audit.read(conversation_id)
    write_atomic(out, markdown(read.entries, servers, title))
    return read


__all__ = ["FORMATS", "Format", "export_calls", "fenced", "markdown"]
