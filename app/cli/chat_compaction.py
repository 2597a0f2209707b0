"""The terminal chat's compactions: the latest carried into every turn, `/compact` and
`/compact undo`.

Guarantees: every turn is asked with the chat's latest compaction (`request`), read from a
resumed chat's history or from the turns of this one (`after`), so a compacted conversation
stays compacted turn after turn and its prompt keeps its prefix; `/compact` compacts at once,
whatever the prompt's size, saying what it did (or why it did not) on stderr, and a saved chat
records it on the next reply (its event is folded first into that reply, where the window shows
it); `/compact undo` drops the latest compaction (from the saved history too), so the next turn
sends every message again. Nothing is summarised but by the conversation's own model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import TextIO

from app.cli.checkpoints import ChatCheckpoints
from app.domain.compaction import Compaction, recorded
from app.domain.events import Compacted, Compacting, ParseIssue, TurnEvent
from app.domain.history import Reply
from app.domain.messages import Conversation
from app.engine.request import GenerationRequest
from app.engine.session import Session
from app.engine.turn.compaction import compact

COMMAND = "/compact"


class TerminalCompactions:
    """See the module guarantees."""

    def __init__(self, latest: Compaction | None = None) -> None:
        self.latest = latest
        self.pending: Compacted | None = None  # made by /compact, recorded on the next reply

    def request(self, generation: GenerationRequest) -> GenerationRequest:
        """`generation` carrying the chat's latest compaction."""
        return dataclasses.replace(generation, compaction=self.latest)

    def events(self, turn: Iterable[TurnEvent], saved: bool) -> Iterator[TurnEvent]:
        """The turn's events, after the compaction `/compact` made (when the chat is saved)."""
        if self.pending is not None and saved:
            yield self.pending
        self.pending = None
        yield from turn

    def after(self, reply: Reply) -> None:
        """Take the compaction a turn made, if it made one."""
        self.latest = recorded(reply.segments) or self.latest

    def command(
        self,
        line: str,
        session: Session,
        conversation: Conversation,
        generation: GenerationRequest,
        err: TextIO,
        saved: ChatCheckpoints | None = None,
    ) -> bool:
        """Run `/compact` or `/compact undo`; False when `line` is neither."""
        word, _, rest = line.strip().partition(" ")
        if word != COMMAND:
            return False
        if rest.strip() == "undo":
            undone, self.latest, self.pending = self.latest, None, None
            if saved is not None:
                saved.undo_compaction()
            said = undone.said() if undone is not None else "there was no compaction"
            err.write(f"[compaction undone: {said}; the model reads every message again]\n")
        else:
            self._now(session, conversation, generation, err)
        return True

    def _now(
        self,
        session: Session,
        conversation: Conversation,
        generation: GenerationRequest,
        err: TextIO,
    ) -> None:
        events = compact(session, conversation, generation, self.latest, force=True)
        made, said = None, False
        while True:
            try:
                event = next(events)
            except StopIteration as stop:
                made = stop.value
                break
            said = True
            if isinstance(event, Compacting):
                err.write(f"[compacting {event.exchanges} exchanges ({event.tokens:,} tokens)…]\n")
            elif isinstance(event, Compacted):
                self.pending = event
                err.write(f"[compacted: {event.compaction.said()}]\n")
            elif isinstance(event, ParseIssue):
                err.write(f"[{event.message.removesuffix('.')}]\n")
        if not said:
            err.write("[nothing to compact yet: the latest exchange is kept as it is]\n")
        self.latest = made


__all__ = ["COMMAND", "TerminalCompactions"]
