"""The attached files an export carries, and what an import restores of them.

Guarantees: `carried` lists each file a conversation's shown messages carried — the turn it
belongs to (0-based), its name, sha256 and size, and its content in base64 unless only
references were asked for; `restore` keeps each listed file with the imported conversation's
turn when its content comes with it and matches its sha256, or when only its reference comes
and a file of that content is already kept here; anything else (a wrong digest, a turn that is
not there, content neither carried nor here) is left out with a note saying what and why —
an import never stores bytes that do not match what the export said. A message's images are
kept files like any other (their bytes are kept with the message's version), so they are
carried and restored the same way; an image whose bytes did not come but are kept here is
kept with the imported message too, and one whose bytes neither came nor are kept here stays in
the conversation (the transcript shows a placeholder) and `restore` notes it missing.
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


def _images_kept(doc: ChatDoc, kept: KeptFiles, listed: set[str]) -> list[str]:
    """The shown messages' images whose bytes are here, kept with their message (whatever the
    file carried); a note for each of the others that no attachment entry spoke of (those
    have their own note)."""
    notes: list[str] = []
    for number, turn in enumerate(doc.turns, 1):
        for image in turn.version.images:
            if kept.stored(image.sha256) is not None:
                kept.record(image.sha256, image.name or "image", doc.id, turn.version.id)
            elif image.sha256 not in listed:
                listed.add(image.sha256)
                notes.append(
                    f"{image.name or 'an image'} (message {number}): its bytes are not in the"
                    " file and not kept here; the conversation shows a placeholder for it"
                )
    return notes


def restore(doc: ChatDoc, entries: Any, kept: KeptFiles) -> list[str]:
    """Keep the listed files with `doc` (see the module guarantees); the notes."""
    if entries is not None and not isinstance(entries, list):
        return ["the attachments list is not a list", *_images_kept(doc, kept, set())]
    images = {i.sha256 for turn in doc.turns for i in turn.version.images}
    notes: list[str] = []
    for entry in entries or []:
        note = _restore_one(doc, entry, kept)
        digest = str(entry.get("sha256")) if isinstance(entry, Mapping) else ""
        if note is not None and digest in images and kept.stored(digest) is None:
            note += " (an image: the conversation shows a placeholder for it)"
        notes += [note] if note is not None else []
    listed = {str(e.get("sha256")) for e in entries or [] if isinstance(e, Mapping)}
    return notes + _images_kept(doc, kept, listed)


__all__ = ["carried", "restore"]
