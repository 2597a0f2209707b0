"""`chat --attach FILE`: the files a message carries, and the sources its answer cited.

Guarantees: before the message is sent, stderr says what each file became ("whole file, N
tokens", "K passages of M", or why it could not be read); the budget is the context left after
the conversation so far and the answer's reserve, counted with the model's own tokenizer (an
estimate of four characters a token for a remote endpoint); after the answer, each passage it
cited is named on stderr with its file and page or lines. With `--library`, every message
also carries the library's most relevant passages (the library refreshed first); the files a
saved conversation's message carried are kept with it, as the window keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.documents.attach import Attached, attach, with_attachments
from app.documents.index import DocumentIndex
from app.domain.citations import cited
from app.engine.session import Session


def prepare(
    session: Session,
    files: Sequence[Path],
    text: str,
    err: TextIO,
    library: bool = False,
) -> tuple[str, Attached]:
    """The message to send with its attachments, said on `err` first."""
    index = DocumentIndex() if library else None
    try:
        # a remote endpoint's tokenizer is not ours: its session estimates
        attached = attach(files, text, session.room(text), session.count, index)
    finally:
        if index is not None:
            index.close()
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
