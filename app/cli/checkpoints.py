"""`chat --save`: the terminal chat's conversation in the history, saved while it streams.

Guarantees: the conversation is written to the same history the window reads when each turn
starts, at least every `CHECKPOINT_S` while an answer streams and at the end of every message,
so a chat killed mid-answer (even with SIGKILL) leaves the answer shown so far in the history,
marked incomplete (E-STREAM-TRUNCATED) with Continue and Regenerate in the window; a turn that
ends is saved as done (or failed, with its reason). What is saved is the `Reply` the one reply
builder folds while the terminal prints it: the history holds what the terminal showed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from app.domain.events import ContentDelta, MessageDone
from app.domain.history import ChatDoc, Reply, Turn, Version
from app.domain.messages import ImageContent, Message
from app.errors import ErrorCode, InvalidInputError
from app.store.history import HistoryStore

CHECKPOINT_S = 0.5


class ChatCheckpoints:
    """One terminal conversation kept in the history as it goes."""

    def __init__(
        self,
        store: HistoryStore | None = None,
        doc: ChatDoc | None = None,
        history: Sequence[Message] = (),
    ) -> None:
        self.store = store or HistoryStore()
        self.doc = doc or ChatDoc()  # a saved conversation goes on (`chat --resume`)
        self.history = tuple(history)  # its messages so far, which the next turn continues
        self._reply: Reply | None = None
        self._done: list[Message] = []
        self._saved = 0.0

    def begin(self, text: str, images: tuple[ImageContent, ...] = ()) -> Reply:
        """A user message (`images` before its text): a new turn whose reply (folded by the
        caller's reply builder) is incomplete until it ends."""
        if not self.doc.turns:
            self.doc.title = (text.strip().splitlines() or ["Terminal chat"])[0][:60]
        self._reply = Reply(state="incomplete", error=_CUT)
        self.doc.turns.append(Turn([Version(text, replies=[self._reply], images=images)]))
        self._done = []
        self._save()
        return self._reply

    def event(self, event: object) -> None:
        """Follow the stream: answer text as it arrives, each message as it closes."""
        if isinstance(event, MessageDone):
            self._done.append(event.message)
            self._save()
        elif isinstance(event, ContentDelta) and time.monotonic() - self._saved >= CHECKPOINT_S:
            self._save()

    def end(self, failed: str | None = None) -> None:
        """The turn ended: done, or failed with its reason (what arrived is kept)."""
        if self._reply is not None:
            if self._reply.state in ("incomplete", "streaming") and self._reply.error == _CUT:
                self._reply.state, self._reply.error = "done", ""
            if failed:
                self._reply.state, self._reply.error = "failed", failed
            self._save()

    def _save(self) -> None:
        if self._reply is not None:
            self._reply.messages = tuple(self._done)
        self.doc.updated = time.time()
        self.store.save(self.doc)
        self._saved = time.monotonic()

    def undo_compaction(self) -> None:
        """Undo the conversation's latest compaction in the history (`ChatDoc.undo_compaction`)."""
        if self.doc.undo_compaction() is not None:
            self._save()

    def close(self) -> None:
        self.store.close()


def saved_chat(save: bool, resume: str | None) -> ChatCheckpoints | None:
    """Where the conversation is saved: a new one with --save, the resumed one with --resume
    (`ChatCheckpoints.history`: its messages, which the first turn continues)."""
    if not resume:
        return ChatCheckpoints() if save else None
    store = HistoryStore()
    try:
        doc = resumed(resume, store)
    except InvalidInputError:
        store.close()
        raise
    sys.stderr.write(f"[resumed {doc.id}: {doc.title}, {len(doc.turns)} turns]\n")
    return ChatCheckpoints(store, doc, doc.prompt_messages())


def resumed(which: str, store: HistoryStore) -> ChatDoc:
    """The saved conversation `which` names (an id, or "last": the most recently active one),
    read whole; `InvalidInputError` when there is none."""
    listed = store.listed()
    if which == "last":
        if not listed:
            raise InvalidInputError("there is no saved conversation to resume")
        which = max(listed, key=lambda d: d.updated).id
    doc = store.load(which)
    if doc is None or doc.id not in {d.id for d in listed}:
        raise InvalidInputError(
            f"there is no saved conversation {which!r} (`harmony-desk history list` shows them)"
        )
    return doc


_CUT = f"{ErrorCode.STREAM_TRUNCATED.value}: the chat stopped before the answer was complete"

__all__ = ["CHECKPOINT_S", "ChatCheckpoints", "resumed", "saved_chat"]
