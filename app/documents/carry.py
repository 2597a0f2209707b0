"""The attached files an export carries, and what an import restores of them.

Guarantees: `carried` lists each file a conversation's shown messages carried — the turn it
belongs to (0-based), its name, sha256 and size, and its content in base64 unless only
references were asked for; `restore` keeps each listed file with the imported conversation's
turn when its content comes with it and matches its sha256, or when only its reference comes
and a file of that content is already kept here; anything else (a wrong digest, a turn that is
not there, content neither carried nor here) is left out with a note saying what and why —
an import never stores bytes that do not match what the export said.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from app.documents.kept import KeptFiles
from app.domain.history import ChatDoc


def carried(doc: ChatDoc, kept: KeptFiles, *, content: bool = True) -> list[dict[str, Any]]:
    """The files the conversation's shown messages carried (see the module guarantees)."""
    out: list[dict[str, Any]] = []
    for turn_number, turn in enumerate(doc.turns):
        for name, stored in kept.files_of(turn.version.id):
            if not stored.is_file():
                continue
            entry: dict[str, Any] = {
                "turn": turn_number,
                "name": name,
                "sha256": stored.name,
                "size": stored.stat().st_size,
            }
            if content:
                entry["data"] = base64.b64encode(stored.read_bytes()).decode("ascii")
            out.append(entry)
    return out


def _restore_one(doc: ChatDoc, entry: Any, kept: KeptFiles) -> str | None:
    """Keep one listed file; None, or the note saying why it was left out."""
    if not isinstance(entry, Mapping):
        return "an attachment entry that is not an object"
    name = PurePath(str(entry.get("name", ""))).name or "unnamed"
    digest, turn = entry.get("sha256"), entry.get("turn")
    if not isinstance(digest, str) or len(digest) != 64:
        return f"{name}: no valid sha256"
    if not isinstance(turn, int) or not 0 <= turn < len(doc.turns):
        return f"{name}: turn {turn!r} is not in the conversation"
    version = doc.turns[turn].version.id
    data = entry.get("data")
    if data is None:
        if kept.stored(digest) is None:
            return f"{name}: the export carried only its reference, and it is not kept here"
        kept.record(digest, name, doc.id, version)
        return None
    try:
        raw = base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        return f"{name}: its content is not base64"
    if hashlib.sha256(raw).hexdigest() != digest:
        return f"{name}: its content does not match its sha256"
    kept.keep_bytes(raw, name, doc.id, version)
    return None


def restore(doc: ChatDoc, entries: Any, kept: KeptFiles) -> list[str]:
    """Keep the listed files with `doc` (see the module guarantees); the notes."""
    if not isinstance(entries, list):
        return ["the attachments list is not a list"] if entries is not None else []
    notes = [_restore_one(doc, entry, kept) for entry in entries]
    return [n for n in notes if n is not None]


__all__ = ["carried", "restore"]
