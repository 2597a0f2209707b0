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
from app.domain.messages import Message, Role
from app.engine.chat import ChatSession
from app.engine.remote import RemoteSession


def _budget(session: ChatSession | RemoteSession, text: str) -> tuple[int, object]:
    """(tokens left for attachments, the counter to use)."""
    if isinstance(session, ChatSession):
        tokenizer = session.tokenizer

        def count(s: str) -> int:
            return len(tokenizer.tokenize(s, special=False))

        asked = session.conversation.with_message(Message.of(Role.USER, text))
        used = len(session.template.prompt_ids(asked, tokenizer))
        n_ctx = getattr(session.client.info, "n_ctx", 4096)
        return n_ctx - used - session.max_tokens, count
    return 8192 - len(text) // 4 - session.max_tokens, lambda s: len(s) // 4 + 1


def prepare(
    session: ChatSession | RemoteSession, files: Sequence[Path], text: str, err: TextIO
) -> tuple[str, Attached]:
    """The message to send with its attachments, said on `err` first."""
    budget, count = _budget(session, text)
    attached = attach(files, text, max(0, budget), count)  # type: ignore[arg-type]
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
