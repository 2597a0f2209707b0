"""The window's compactions: Compact now, Undo, and the selected chat's latest compaction.

Guarantees:
- Compact now (`compact_now`) summarises the selected chat's older exchanges at once, with no
  turn and no answer: the latest exchange stays verbatim (and what fits in the settings' share
  of the room), the latest compaction is carried forward, and the summary is written by the
  chat's own model on the engine thread (`turn_source.compaction_events`); it holds the chat
  like a turn does (Stop or Esc ends it, nothing else starts meanwhile), and its record is the
  notice the one reply builder makes of `Compacted`, added to the reply of the chat's latest
  turn and saved with it, so every later turn of that branch is sent compacted. A compacted
  chat keeps summarise as its own policy (said when it had another; a later change of the
  settings' default does not change it): it is the policy whose turns carry a compaction.
  What was not done is said (`notice`): nothing to compact yet, the summary failed, the model
  was stopped;
- Undo (`undo`) takes the record out of the marker's segment (the domain's `undo`: it is
  kept as `undone`, the marker says it was undone) and out of every later marker of the
  chosen branch (they carry its summary forward), saves each reply it changed and repaints
  those segments: the next turn sends the exchanges again; an earlier compaction that still
  applies is said. Nothing is undone while an answer streams (the turn was asked with it);
- `changed` is emitted whenever the selected chat's latest compaction may differ (another
  chat shown, a turn ended, compacted now, undone); `latest` is that compaction.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Protocol

from PySide6.QtCore import QObject, Signal, SignalInstance

from app.controllers.bridge import StreamCrashed
from app.controllers.turn_inputs import TurnOwner, compaction_spec, read_stored
from app.controllers.turn_source import compaction_events
from app.domain.budget import Overflow
from app.domain.compaction import Compaction, record_of, undo
from app.domain.events import Compacted, Compacting, ParseIssue, SessionEvent, TurnFailed
from app.domain.history import ChatDoc, Reply, Version
from app.domain.reply import Added, ReplyBuilder

NOTHING_YET = "Nothing to compact yet: the latest exchange is always kept as it is."
BUSY = "An answer is still coming: compact or undo once it has ended."


class CompactingChat(TurnOwner, Protocol):
    """What compactions need of the chat controller (passed in: never imported here)."""

    doc: ChatDoc
    busy: bool

    @property
    def can_answer(self) -> bool: ...
    @property
    def shows_answer(self) -> bool: ...
    @property
    def docChanged(self) -> SignalInstance: ...
    @property
    def replyFinished(self) -> SignalInstance: ...
    @property
    def segmentAdded(self) -> SignalInstance: ...
    @property
    def segmentUpdated(self) -> SignalInstance: ...
    @property
    def debugChanged(self) -> SignalInstance: ...
    @property
    def notice(self) -> SignalInstance: ...
    def hold(self, doc: ChatDoc) -> threading.Event: ...
    def release(self) -> None: ...
    async def stored(self, work: Callable[[], None]) -> None: ...
    def persist(
        self,
        version: Version | None = None,
        reply: Reply | None = None,
        *,
        structure: bool = True,
        doc: ChatDoc | None = None,
    ) -> None: ...


class Compactions(QObject):
    """See the module guarantees."""

    changed = Signal()  # the selected chat's latest compaction may have changed

    def __init__(self, chat: CompactingChat) -> None:
        super().__init__()
        self.chat = chat
        self._task: asyncio.Task[None] | None = None
        chat.docChanged.connect(self.changed)
        chat.replyFinished.connect(lambda _turn: self.changed.emit())

    def latest(self) -> Compaction | None:
        """The selected chat's latest compaction on its chosen branch (None: none, or undone)."""
        return self.chat.doc.compaction()

    def refused(self) -> str:
        """Why Compact now cannot run now ("" when it can)."""
        chat, turns = self.chat, self.chat.doc.turns
        if chat.busy:
            return BUSY
        if not chat.can_answer:
            return "No model is loaded to write the summary: open one first."
        if len(turns) < 2 or turns[-1].version.reply is None:
            return NOTHING_YET
        return ""

    # --- compact now ---------------------------------------------------------------------

    def compact_now(self) -> bool:
        """Compact the selected chat at once (see the module guarantees); False, said, when it
        cannot now."""
        why = self.refused()
        if why:
            self.chat.notice.emit(why)
            return False
        doc = self.chat.doc
        cancel = self.chat.hold(doc)
        self._task = asyncio.ensure_future(self._compact(doc, cancel))
        return True

    async def wait(self) -> None:
        """Until a running Compact now ends (tests)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _compact(self, doc: ChatDoc, cancel: threading.Event) -> None:
        chat, turn = self.chat, len(doc.turns) - 1
        version = doc.turns[turn].version
        reply = version.reply
        assert reply is not None  # `refused` says so otherwise
        said = False
        try:
            await chat.stored(partial(read_stored, doc, len(doc.turns), reply))
            spec = compaction_spec(chat, doc, cancel)
            async for event in chat.host.bridge.stream(partial(compaction_events, spec)):
                said = True
                self._on_event(doc, turn, version, event)
            if not said:
                chat.notice.emit(NOTHING_YET)
        finally:
            chat.release()
            self.changed.emit()

    def _on_event(
        self, doc: ChatDoc, turn: int, version: Version, event: SessionEvent | StreamCrashed
    ) -> None:
        """One event of a Compact now: the record folded into the latest reply; the rest said."""
        chat = self.chat
        match event:
            case Compacting():
                chat.notice.emit(compacting_said(event))
            case Compacted():
                self._record(doc, turn, version, event)
            case ParseIssue():
                chat.notice.emit(event.message)
            case TurnFailed():
                chat.notice.emit(f"The conversation was not compacted: {event.reason}")
            case StreamCrashed():
                chat.notice.emit(f"The conversation was not compacted: {event.message}")
            case _:
                pass

    def _record(self, doc: ChatDoc, turn: int, version: Version, event: Compacted) -> None:
        """The compaction's marker on the latest reply (the one reply builder writes it),
        saved with the chat, whose own policy becomes summarise (said if it was another)."""
        chat, reply = self.chat, version.reply
        assert reply is not None
        for change in ReplyBuilder(reply).apply(event):
            if isinstance(change, Added) and chat.shows_answer:
                chat.segmentAdded.emit(turn, change.index)
        said = f"Compacted: {event.compaction.said()}."
        changed = (doc.overflow or chat.overflow) is not Overflow.SUMMARISE
        doc.overflow = Overflow.SUMMARISE  # its own now: a later default does not undo it
        if changed:
            said += (
                " This chat now summarises when it nears full, so its next messages are sent"
                " compacted (When the context is full ▸ Summarise)."
            )
        chat.persist(version, reply, doc=doc)
        if chat.shows_answer:
            chat.debugChanged.emit(turn)
        chat.notice.emit(said)

    # --- undo ----------------------------------------------------------------------------

    def undo(self, turn: int, segment: int) -> Compaction | None:
        """Undo the compaction recorded on segment `segment` of turn `turn`'s reply in the
        selected chat, and every later one (see the module guarantees); what was undone there
        (None: nothing was, said when an answer streams)."""
        chat = self.chat
        if chat.busy:
            chat.notice.emit(BUSY)
            return None
        doc = chat.doc
        done: list[Compaction] = []
        for t, version, reply in _replies(doc, turn):
            start = segment if t == turn else 0
            undone = {i: c for i in range(start, len(reply.segments)) if (c := _undo(reply, i))}
            if undone:
                chat.persist(version, reply, doc=doc)
                for i in undone:
                    chat.segmentUpdated.emit(t, i)
                done += undone.values()
        if done:
            chat.notice.emit(_undone_said(done[0], doc.compaction()))
            self.changed.emit()
        return done[0] if done else None

    def undo_latest(self) -> Compaction | None:
        """Undo the selected chat's latest compaction (`/compact undo`)."""
        for t, _version, reply in reversed(list(_replies(self.chat.doc, 0))):
            for i in reversed(range(len(reply.segments))):
                found = record_of(reply.segments[i])
                if found is not None and found[1]:
                    return self.undo(t, i)
        self.chat.notice.emit("This chat has no compaction to undo.")
        return None


def compacting_said(event: Compacting) -> str:
    """What the status bar says while a compaction's summary is written."""
    plural = "" if event.exchanges == 1 else "s"
    exchanges = f"{event.exchanges} older exchange{plural}"
    return f"Compacting: summarising {exchanges} ({event.tokens:,} tokens)…"


def _replies(doc: ChatDoc, start: int) -> Iterator[tuple[int, Version, Reply]]:
    """The chosen branch's turns from `start` on that have a reply, with it."""
    for t in range(start, len(doc.turns)):
        version = doc.turns[t].version
        if version.reply is not None:
            yield t, version, version.reply


def _undo(reply: Reply, index: int) -> Compaction | None:
    """Undo the compaction recorded on segment `index`, if any (the domain's `undo`)."""
    return undo([reply.segments[index]])


def _undone_said(undone: Compaction, still: Compaction | None) -> str:
    """What an undo did, in the status bar."""
    said = f"Compaction undone ({undone.said()}): the next message sends those exchanges again."
    if still is not None:
        said += f" An earlier compaction still applies: {still.said()}."
    return said


__all__ = [
    "BUSY",
    "NOTHING_YET",
    "CompactingChat",
    "Compactions",
    "compacting_said",
]
