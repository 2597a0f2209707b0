"""The chat controller's painting of a streaming reply: the reply builder's changes handed to
the view at human speed, and the streaming answer checkpointed as it grows.

Guarantees:
- visible text is coalesced: appended text is gathered and handed to the view at most every
  `FLUSH_MS` (40 ms), one `segmentText` per segment per flush, and only for a segment that is
  still there (the turn may have been cut away meanwhile);
- a segment added or updated is painted at once, after the text gathered before it, so the
  view sees the changes in the order the builder made them;
- a grown debug record is said with one `debugChanged` per turn per flush;
- the streaming reply is saved (its answer only: cheap) at a flush at least every
  `CHECKPOINT_S` (0.5 s), and at the first flush after a message ends, in its own
  conversation whichever one is shown;
- nothing is painted while another conversation is shown, and what was gathered is dropped
  when the view draws a conversation whole (`drop`): the builder has already put that text in
  its segment, so it is never drawn twice.
"""

from __future__ import annotations

import time
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, SignalInstance

from app.domain.history import ChatDoc, Reply, Version
from app.domain.reply import Added, Appended, Change, Thought

FLUSH_MS = 40
CHECKPOINT_S = 0.5  # a streaming answer is saved at least this often, and at every message end


class Canvas(Protocol):
    """What the painter paints on and saves through: the chat controller (its signals, the
    selected conversation, `persist`, and when it last saved, `_checkpointed`)."""

    _checkpointed: float
    answering: ChatDoc | None

    @property
    def doc(self) -> ChatDoc: ...
    @property
    def shows_answer(self) -> bool: ...
    @property
    def segmentAdded(self) -> SignalInstance: ...
    @property
    def segmentText(self) -> SignalInstance: ...
    @property
    def segmentUpdated(self) -> SignalInstance: ...
    @property
    def debugChanged(self) -> SignalInstance: ...
    def persist(
        self,
        version: Version | None = None,
        reply: Reply | None = None,
        *,
        structure: bool = True,
        doc: ChatDoc | None = None,
    ) -> None: ...


class ReplyPainter:
    """Paints the changes of the chat controller's streaming reply on its signals (see the
    module guarantees); `streaming` is the version and reply being checkpointed."""

    def __init__(self, chat: Canvas, owner: QObject) -> None:
        """`owner`: the coalescing timer's parent (the chat controller itself)."""
        self._chat = chat
        self.streaming: tuple[Version, Reply] | None = None
        self._pending: dict[tuple[int, int], str] = {}  # (turn, segment) → text not yet shown
        self._debug_pending: set[int] = set()  # turns whose debug record grew
        self._timer = QTimer(owner)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)

    def paint(self, turn: int, change: Change) -> None:
        """Hand one change to the view: text is coalesced (`FLUSH_MS`), the rest is at once."""
        if isinstance(change, Appended):
            key = (turn, change.index)
            self._pending[key] = self._pending.get(key, "") + change.text
        elif isinstance(change, Thought):
            self._debug_pending.add(turn)
        else:
            self.flush()
            chat = self._chat
            signal = chat.segmentAdded if isinstance(change, Added) else chat.segmentUpdated
            if chat.shows_answer:
                signal.emit(turn, change.index)
            return
        self._later()

    def debug_grew(self, turn: int) -> None:
        """Turn `turn`'s debug record grew: said at the next flush."""
        self._debug_pending.add(turn)

    def message_ended(self) -> None:
        """A message boundary: the streaming reply is saved at the next flush."""
        self._chat._checkpointed = 0.0

    def _later(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def drop(self) -> None:
        """The view draws a conversation whole: the text gathered so far is in it already."""
        self._pending.clear()
        self._debug_pending.clear()

    def flush(self) -> None:
        """Hand the gathered text to the view (one signal per segment), when it shows the
        streaming conversation."""
        chat = self._chat
        if not chat.shows_answer:
            self.drop()
        pending, self._pending = self._pending, {}
        for (turn, index), text in pending.items():
            reply = chat.doc.turns[turn].version.reply if turn < len(chat.doc.turns) else None
            if reply is None or index >= len(reply.segments):
                continue
            chat.segmentText.emit(turn, index, text)  # the builder has put it in the segment
        for turn in self._debug_pending:
            chat.debugChanged.emit(turn)
        self._debug_pending.clear()
        if self.streaming is not None and time.monotonic() - chat._checkpointed >= CHECKPOINT_S:
            chat.persist(*self.streaming, structure=False, doc=chat.answering)  # cheap
        if not self._pending:
            self._timer.stop()


__all__ = ["CHECKPOINT_S", "FLUSH_MS", "Canvas", "ReplyPainter"]
