"""The tool audit log: every call, appended as one JSON line, exportable per conversation.

Guarantees: each record holds the conversation, the tool, the arguments as the model sent them
and as they ran (after the user's edits), the approval decision, the duration, and the result
or the error, every string in it redacted (`app.domain.redact`: a keyring value, a secret of
the app's environment, a secret shape); the file is readable by the user only (0600, also when
an older one was not); a record is flushed and fsynced before `append` returns; a damaged line
(a crash mid-write, a hand edit) is skipped and counted, never fatal, and the rest is read;
exports are written atomically as JSON (an array) or JSON Lines.

A result is kept whole (a tool's images by name, type, size and sha256: their bytes are the
image store's), with its `result_key` (the sha256 of the result as stored, redacted: the same
text gives the same key, and the key says nothing a reader of the audit cannot read); the text a
model reads of a result cut to its share of the context ends with `cut_marker`, which names that
key, so `find` (and `cut_key`, which reads the key back from the text) brings back the whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from app.domain.events import CallRecord
from app.domain.redact import redact_data
from app.fileio import write_atomic
from app.paths import data_dir
from app.tools.result_parts import TextWithImages

KEY_HEX = 16  # hex digits of a result's key
_CUT = re.compile(rf"kept in the tool audit as result ([0-9a-f]{{{KEY_HEX}}})\]")
TAIL = 400  # the marker is looked for in this many characters at the end of a text


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def whole_text(result: Any) -> str:
    """A result as the audit shows it whole: its text, or its JSON (indented)."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=1)


def _key(stored: Any) -> str:
    return hashlib.sha256(whole_text(stored).encode()).hexdigest()[:KEY_HEX]


def result_key(content: Any) -> str:
    """The key the audit keeps `content` under (see the module guarantees)."""
    return _key(redact_data(_jsonable(content)))


def cut_marker(kept: int, total: int, key: str) -> str:
    """What ends the text a model reads of a result cut to its share of the context."""
    return (
        f"\n[cut here: the first {kept:,} of the result's {total:,} characters were read,"
        f" {total - kept:,} left out to keep within this result's share of the context; the"
        f" whole result is kept in the tool audit as result {key}]"
    )


def cut_key(text: str) -> str | None:
    """The key of the whole result that `text` (a result as it was read) was cut from; None
    when it was not cut."""
    found = _CUT.search(text[-TAIL:])
    return found.group(1) if found else None


def _images(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, TextWithImages):
        return []
    return [
        {
            "name": i.name,
            "mime": i.mime,
            "bytes": len(i.data),
            "sha256": hashlib.sha256(i.data).hexdigest(),
        }
        for i in content.images
    ]


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
        if images := _images(outcome.content):
            entry["images"] = images
    else:
        entry["error"] = {"code": outcome.error_code, "message": outcome.error}
    stored: dict[str, Any] = redact_data(_jsonable(entry))
    stored["result_key"] = _key(whole_of(stored) if outcome.ok else stored["error"]["message"])
    return stored


def whole_of(entry: dict[str, Any]) -> str:
    """An entry's whole result (its error's message, for a call that failed) as text."""
    if "result" in entry:
        return whole_text(entry["result"])
    error = entry.get("error")
    return whole_text(error.get("message") if isinstance(error, dict) else None)


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

    def find(self, key: str) -> dict[str, Any] | None:
        """The latest entry whose result has `key` (`result_key`); None when none has."""
        said = f'"result_key": "{key}"'
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
        for line in reversed(text.splitlines()):
            if said not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("result_key") == key:
                return entry
        return None

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


__all__ = [
    "AuditLog",
    "AuditRead",
    "cut_key",
    "cut_marker",
    "record_to_dict",
    "result_key",
    "whole_of",
    "whole_text",
]
