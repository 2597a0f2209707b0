"""The tool audit log: every call, appended as one JSON line, exportable per conversation.

Guarantees: each record holds the conversation, the tool, the arguments as the model sent them
and as they ran (after the user's edits), the approval decision, the duration, and the result
or the error, every string in it redacted (`app.domain.redact`: a keyring value, a secret of
the app's environment, a secret shape); the file is readable by the user only (0600, also when
an older one was not); a record is flushed and fsynced before `append` returns; a damaged line
(a crash mid-write, a hand edit) is skipped and counted, never fatal, and the rest is read;
exports are written atomically as JSON (an array) or JSON Lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from app.domain.events import CallRecord
from app.domain.redact import redact_data
from app.fileio import write_atomic
from app.paths import data_dir


def record_to_dict(record: CallRecord, conversation_id: str) -> dict[str, Any]:
    """One audit entry as JSON-ready data, redacted."""
    outcome = record.outcome
    entry: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "conversation": conversation_id,
        "call_id": record.call_id,
        "tool": record.tool,
        "arguments_sent": record.arguments_sent,
        "arguments_run": outcome.arguments,
        "decision": outcome.decision,
        "duration_ms": None if outcome.duration_ms is None else round(outcome.duration_ms, 1),
        "ok": outcome.ok,
    }
    if outcome.ok:
        entry["result"] = outcome.content
    else:
        entry["error"] = {"code": outcome.error_code, "message": outcome.error}
    return redact_data(json.loads(json.dumps(entry, ensure_ascii=False, default=str)))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class AuditRead:
    entries: list[dict[str, Any]]
    damaged_lines: int = 0


class AuditLog:
    """An append-only JSON Lines file (default: `tool-audit.jsonl` in the data folder)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or data_dir() / "tool-audit.jsonl"

    def append(self, records: Iterable[CallRecord], conversation_id: str) -> None:
        lines = [
            json.dumps(record_to_dict(r, conversation_id), ensure_ascii=False, default=str)
            for r in records
        ]
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)
        with open(fd, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
            f.flush()
            os.fsync(f.fileno())

    def read(self, conversation_id: str | None = None) -> AuditRead:
        entries: list[dict[str, Any]] = []
        damaged = 0
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return AuditRead([])
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                damaged += 1
                continue
            if not isinstance(entry, dict):
                damaged += 1
            elif conversation_id is None or entry.get("conversation") == conversation_id:
                entries.append(entry)
        return AuditRead(entries, damaged)

    def export(
        self,
        out: Path,
        *,
        conversation_id: str | None = None,
        fmt: Literal["json", "jsonl"] = "json",
    ) -> AuditRead:
        """Write the (conversation's) entries to `out`; returns what was read."""
        read = self.read(conversation_id)
        if fmt == "json":
            text = json.dumps(read.entries, ensure_ascii=False, indent=1) + "\n"
        else:
            text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in read.entries)
        write_atomic(out, text)
        return read


__all__ = ["AuditLog", "AuditRead", "record_to_dict"]
