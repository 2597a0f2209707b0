"""`chat --attach FILE`: the files a message carries, and the sources its answer cited.

Guarantees: before the message is sent, stderr says what each file became ("whole file, N
tokens", "K passages of M", or why it could not be read); the budget is the context left after
the conversation so far and the answer's reserve, counted with the model's own tokenizer (an
estimate of four characters a token for a remote endpoint); after the answer, each passage it
cited is named on stderr with its file and page or lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.documents.attach import Attached, attach, with_attachments
from app.domain.citations import cited
from app.engine.chat import ChatSession
from app.engine.remote import RemoteSession


def prepare(
    session: ChatSession | RemoteSession, files: Sequence[Path], text: str, err: TextIO
) -> tuple[str, Attached]:
    """The message to send with its attachments, said on `err` first."""
    if isinstance(session, ChatSession):
        attached = attach(files, text, session.room(text), session.count)
    else:  # a remote endpoint's tokenizer is not ours: about four characters a token
        room = 8192 - len(text) // 4 - session.max_tokens
        attached = attach(files, text, max(0, room), lambda s: len(s) // 4 + 1)
    for file in attached.files:
        err.write(f"[attached] {file.note()}\n")
    return with_attachments(text, attached), attached


def sources(answer: str, attached: Attached, err: TextIO) -> None:
    """Name the passages the answer cited."""
    passages = attached.passages
    for n in cited(answer, len(passages)):
        p = passages[n - 1]
        err.write(f"[{n}] {p.file}, {p.where}\n")


__all__ = ["prepare", "sources"]
