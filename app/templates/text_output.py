"""Output of non-Harmony models: text, with `<think>...</think>` routed to the analysis lane.

Guarantees: emits the same typed events as the Harmony parser (one analysis message per think
block, one final answer); bytes of a character split across tokens are held until complete;
a tag split across tokens is held back until it is known to be a tag or text; reasoning never
reaches the answer lane.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from app.domain.events import (
    ContentDelta,
    MessageDone,
    MessageStarted,
    ParseEvent,
    StopReason,
    TurnDone,
)
from app.domain.messages import Message, Role
from app.domain.visibility import Lane

OPEN, CLOSE = "<think>", "</think>"


class TextOutputParser:
    """Parses one generation of a plain-text chat model."""

    def __init__(self, table: Sequence[bytes], stop_ids: Sequence[int]) -> None:
        self._table = table
        self._stops = frozenset(stop_ids)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # text that may be the start of a tag
        self._thinking = False
        self._index = -1
        self._open_lane: Lane | None = None
        self._text: list[str] = []
        self._ids: list[int] = []
        self.messages: list[Message] = []
        self.stop: StopReason | None = None
        self._events: list[ParseEvent] = []

    def feed(self, token: int) -> list[ParseEvent]:
        if self.stop is not None:
            return []
        if token in self._stops:
            self.stop = StopReason.RETURN
            return []
        self._ids.append(token)
        piece = self._table[token] if 0 <= token < len(self._table) else b""
        self._text_in(self._decoder.decode(piece))
        return self._drain()

    def finish(self, reason: str = "") -> list[ParseEvent]:
        self._text_in(self._decoder.decode(b"", final=True))
        self._emit(self._pending)
        self._pending = ""
        self._close()
        self._events.append(TurnDone(stop=self.stop or StopReason.TRUNCATED, detail=reason))
        return self._drain()

    def _drain(self) -> list[ParseEvent]:
        events, self._events = self._events, []
        return events

    def _text_in(self, text: str) -> None:
        buf = self._pending + text
        while buf:
            tag = CLOSE if self._thinking else OPEN
            at = buf.find(tag)
            if at >= 0:
                self._emit(buf[:at])
                self._close()
                self._thinking = not self._thinking
                buf = buf[at + len(tag) :]
                continue
            keep = next(
                (n for n in range(min(len(tag) - 1, len(buf)), 0, -1) if tag.startswith(buf[-n:])),
                0,
            )
            self._emit(buf[: len(buf) - keep])
            buf = buf[len(buf) - keep :]
            break
        self._pending = buf

    def _emit(self, text: str) -> None:
        if not text:
            return
        lane = Lane.ANALYSIS if self._thinking else Lane.ANSWER
        if self._open_lane is not lane:
            self._close()
            self._index += 1
            self._open_lane = lane
            channel = "analysis" if self._thinking else "final"
            self._events.append(
                MessageStarted(self._index, Role.ASSISTANT, None, channel, None, None, lane)
            )
        self._text.append(text)
        self._events.append(ContentDelta(self._index, text, lane))

    def _close(self) -> None:
        if self._open_lane is None:
            return
        channel = "analysis" if self._open_lane is Lane.ANALYSIS else "final"
        message = Message.of(Role.ASSISTANT, "".join(self._text), channel=channel)
        self.messages.append(message)
        complete = self.stop is not None or self._open_lane is Lane.ANALYSIS
        self._events.append(
            MessageDone(self._index, message, self._open_lane, complete, tuple(self._ids))
        )
        self._open_lane, self._text, self._ids = None, [], []
