"""The window's attachments: files a message carries, made into its context on the engine
thread, then sent like any message.

Guarantees: the files are read, chunked and measured off the GUI thread, on the engine thread
(the model's tokenizer answers there); the budget is the context left after the conversation,
the message and the answer's reserve; what each file became is said before the turn starts
(the controller's `notice`, which the window shows) and returned for the composer's chips; a
file that cannot be read is said and the message is still sent; with a remote endpoint the
tokens are estimated at four characters each. A conversation that uses the documents library
sends every message this way: it carries the library's passages. The files are kept with the
conversation (one copy per content, `app/documents/kept.py`) once the message is in the
history; `kept_of` and `viewable` let the user open them again from the message. `library`
lists the indexed documents the composer's `@` offers (the library refreshed first). Importing
this module loads nothing of `app.documents` (numpy, the extractors): each function loads what
it uses.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from app.controllers.fit import conversation_session
from app.domain.attachments import estimate, estimated_room
from app.paths import cache_dir

if TYPE_CHECKING:  # the documents package (numpy, extractors) loads at the first attachment
    from app.controllers.chat import ChatController
    from app.documents.attach import Attached


def _attached(controller: ChatController, files: Sequence[Path], text: str) -> Attached:
    """On the engine thread: the message's attachments within the context left."""
    from app.documents.attach import attach
    from app.documents.index import DocumentIndex

    doc = controller.doc
    index = DocumentIndex() if doc.library else None
    try:
        if doc.endpoint is None and controller.host.ready:
            session = conversation_session(controller, controller.max_tokens)
            return attach(files, text, session.room(text), session.count, index)
        room = estimated_room(text, controller.max_tokens)
        return attach(files, text, room, estimate, index)
    finally:
        if index is not None:
            index.close()


async def send_with(controller: ChatController, text: str, files: Sequence[Path]) -> Attached:
    """Send `text` carrying `files` (see the module guarantees)."""
    from app.documents.attach import with_attachments
    from app.documents.kept import keep_files

    attached = await controller.host.bridge.call(lambda: _attached(controller, files, text))
    controller.notice.emit("Attached: " + "; ".join(f.note() for f in attached.files))
    if controller.send(with_attachments(text, attached)):
        doc, version = controller.doc.id, controller.doc.turns[-1].version.id
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, partial(keep_files, files, doc, version))
    return attached


def pasted_files(urls: Sequence[str], text: str) -> list[Path]:
    """The files a paste stands for: local files copied in a file manager, or text that is
    only the path of an existing document (absolute, or `file://`); [] for anything else."""
    from app.documents.extract import SUFFIXES

    if urls:
        return [Path(u) for u in urls]
    line = text.strip()
    if "\n" in line:
        return []
    path = Path(line.removeprefix("file://")).expanduser()
    ok = path.is_absolute() and path.suffix.lower() in SUFFIXES and path.is_file()
    return [path] if ok else []


def kept_of(version: str) -> list[tuple[str, Path]]:
    """(name, stored copy) of each file the message version carried that is kept here."""
    from app.documents.kept import KeptFiles

    kept = KeptFiles()
    try:
        return [(name, path) for name, path in kept.files_of(version) if path.is_file()]
    finally:
        kept.close()


def viewable(name: str, stored: Path) -> Path:
    """A copy of a kept file under its own name (so the desktop opens it with the right
    program), in the cache folder; the kept copy itself is never handed out to be edited."""
    folder = cache_dir() / "opened" / stored.name
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (Path(name).name or "attachment")
    if not target.is_file():
        shutil.copyfile(stored, target)
    return target


def library() -> list[Path]:
    """The documents in the library (`harmony-desk documents add`), for the composer's `@`;
    call off the GUI thread (it reads the index)."""
    from app.documents.index import DocumentIndex

    index = DocumentIndex()
    try:
        index.refresh()  # files added to a library folder, changed or removed since
        return [Path(str(d["path"])) for d in index.documents() if d["chunks"]]
    finally:
        index.close()


__all__ = ["kept_of", "library", "pasted_files", "send_with", "viewable"]
