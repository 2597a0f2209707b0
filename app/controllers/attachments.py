"""The window's attachments: files a message carries, made into its context on the engine
thread, then sent like any message.

Guarantees: the files are read, chunked and measured off the GUI thread, on the engine thread
(the model's tokenizer answers there); the budget is the context left after the conversation,
the message and the answer's reserve; what each file became is said before the turn starts
(the controller's `notice`, which the window shows) and returned for the composer's chips; a
file that cannot be read is said and the message is still sent; with a remote endpoint the
tokens are estimated at four characters each. The files are kept with the conversation (one
copy per content, `app/documents/kept.py`) once the message is in the history. `library`
lists the indexed documents the composer's `@` offers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from app.controllers.chat import ChatController
from app.controllers.turn_inputs import header
from app.documents.attach import Attached, attach, with_attachments
from app.documents.index import DocumentIndex
from app.documents.kept import KeptFiles


def _attached(controller: ChatController, files: Sequence[Path], text: str) -> Attached:
    """On the engine thread: the message's attachments within the context left."""
    doc = controller.doc
    if doc.endpoint is None and controller.host.ready:
        session = controller.host.session(max_tokens=controller.max_tokens)
        session.conversation = session.conversation.with_messages(
            header(doc.instructions) + doc.messages()
        )
        return attach(files, text, session.room(text), session.count)
    room = 8192 - len(text) // 4 - controller.max_tokens
    return attach(files, text, max(0, room), lambda s: len(s) // 4 + 1)


async def send_with(controller: ChatController, text: str, files: Sequence[Path]) -> Attached:
    """Send `text` carrying `files` (see the module guarantees)."""
    attached = await controller.host.bridge.call(lambda: _attached(controller, files, text))
    controller.notice.emit("Attached: " + "; ".join(f.note() for f in attached.files))
    if controller.send(with_attachments(text, attached)):
        doc, version = controller.doc.id, controller.doc.turns[-1].version.id
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, partial(keep, files, doc, version))
    return attached


def keep(files: Sequence[Path], conversation: str, version: str) -> None:
    """Off the GUI thread: the files kept with the conversation (one copy per content)."""
    kept = KeptFiles()
    try:
        for path in files:
            if path.is_file():
                kept.keep(path, conversation, version)
    finally:
        kept.close()


def library() -> list[Path]:
    """The documents in the library (`harmony-desk documents add`), for the composer's `@`;
    call off the GUI thread (it reads the index)."""
    index = DocumentIndex()
    try:
        return [Path(str(d["path"])) for d in index.documents() if d["chunks"]]
    finally:
        index.close()


__all__ = ["keep", "library", "send_with"]
