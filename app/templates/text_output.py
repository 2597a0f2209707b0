"""Output of non-Harmony models: text, with `<think>...</think>` (or the call format's own think
tags, `CallFormat.think`) routed to the analysis lane.

Guarantees: emits the same typed events as the Harmony parser (one analysis message per think
block, one final answer); bytes of a character split across tokens are held until complete;
a tag split across tokens is held back until it is known to be a tag or text; reasoning never
reaches the answer lane. Given a tool-call format, answer text (never reasoning: a call written
inside `<think>` is part of the thinking) goes through its scanner: each call becomes a call
message (recipient `functions.NAME`, JSON arguments, the tool-call lane) with the text before it
kept as its own answer message; markup that is no valid call becomes an error `ParseIssue`
naming the tool and why, never a call and never answer text. While a call is held, text goes
to it whole (`CallScanner.feed_call`): think tags in a call's arguments (code that prints them)
are the call's text, never reasoning and never dropped. Control tokens that are call markup
(`spelled`) are read as their text. A generation whose prompt opened a `<think>` block
(`thinking`) starts inside it. `think` overrides the tags (a template's own reasoning markup,
`app/templates/reasoning_markup.py`); a close tag with no open one is dropped, never shown
(unless the call format reads it as its own markup). `tools` names the tools the conversation
declares: the format reads, besides its own markup, what only they tell from an answer's own
text (`CallFormat.knowing`).
"""

from __future__ import annotations

import codecs
from collections.abc import Collection, Mapping, Sequence

from app.domain.events import (
    ContentDelta,
    MessageDone,
    MessageStarted,
    ParseEvent,
    StopReason,
    TurnDone,
)
from app.domain.messages import Author, Message, Role, TextContent
from app.domain.visibility import Lane
from app.templates.calls.format import CallFormat, ToolCall, recipient_of
from app.templates.calls.scanner import CallScanner, Scanned, invalid_call

OPEN, CLOSE = "<think>", "</think>"
_ASSISTANT = Author(role=Role.ASSISTANT)  # frozen: every message of a generation shares it


def _message(text: str, **header: str | None) -> Message:
    """An assistant message holding `text` (`Message.of`, its author built once)."""
    return Message(author=_ASSISTANT, content=(TextContent(text=text),), **header)


class Tag:
    """A think tag, and how much of a text's end may still grow into it (`tail`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._head = text[:2]  # a start of two characters or more begins so
        self._starts = [text[:n] for n in range(len(text))]

    def tail(self, text: str) -> int:
        """How many of `text`'s last characters may still grow into the tag (the longest of
        its ends that is a proper start of it): one search for the tag's first two characters,
        per token, and a look at the last character."""
        n, tag = len(text), self.text
        at = text.find(self._head, max(0, n - len(tag) + 1))
        while at >= 0:
            if text.endswith(self._starts[n - at]):
                return n - at
            at = text.find(self._head, at + 1)
        return 1 if len(tag) > 1 and text[-1:] == tag[0] else 0


class TextOutputParser:
    """Parses one generation of a plain-text chat model."""

    def __init__(
        self,
        table: Sequence[bytes],
        stop_ids: Sequence[int],
        calls: CallFormat | None = None,
        spelled: Mapping[int, str] | None = None,
        thinking: bool = False,
        think: tuple[str, str] | None = None,
        tools: Collection[str] = (),
    ) -> None:
        self._table = table
        self._stops = frozenset(stop_ids)
        self._scanner = CallScanner(calls.knowing(tools)) if calls is not None else None
        self._spelled = {i: t.encode() for i, t in (spelled or {}).items()}
        self.called = False  # a call was read
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # text that may be the start of a tag
        self._thinking = thinking  # the prompt opened a `<think>` block: it starts inside
        tags = think or (calls.think if calls is not None else (OPEN, CLOSE))  # the family's own
        self._tags = (Tag(tags[0]), Tag(tags[1]))
        # a close with no open is dropped, unless it is call markup too (Muse's `<|eom|>`)
        self._strays = calls is None or not any(tags[1] in t for t in calls.triggers)
        self._index = -1
        self._open_lane: Lane | None = None
        self._text: list[str] = []
        self._ids: list[int] = []
        self.messages: list[Message] = []
        self.stop: StopReason | None = None
        self._events: list[ParseEvent] = []
        self._free: frozenset[str] | None = frozenset()  # see `_gate`
        self._one = ""
        self._gate()

    def feed(self, token: int) -> list[ParseEvent]:
        if self.stop is not None:
            return []
        if token in self._stops:
            self.stop = StopReason.RETURN
            return []
        self._ids.append(token)
        piece = self._spelled.get(token) or (
            self._table[token] if 0 <= token < len(self._table) else b""
        )
        self._text_in(self._decoder.decode(piece))
        return self._drain()

    def finish(self, reason: str = "") -> list[ParseEvent]:
        self._text_in(self._decoder.decode(b"", final=True))
        self._emit(self._pending)
        self._pending = ""
        if self._scanner is not None and not self._thinking:
            self._answer(self._scanner.finish())
        self._close()
        self._events.append(TurnDone(stop=self.stop or StopReason.TRUNCATED, detail=reason))
        return self._drain()

    def _drain(self) -> list[ParseEvent]:
        events, self._events = self._events, []
        return events

    def _text_in(self, text: str) -> None:
        buf = self._pending + text
        while buf:
            if self._free is None and self._holds_call():  # (None: the scanner holds text)
                buf = self._call_text(buf)  # a held call's text, think tags and all
                continue
            tag = self._tags[1] if self._thinking else self._tags[0]
            at = buf.find(tag.text)
            if self._strays and not self._thinking:  # a close before any open: dropped
                closing = self._tags[1].text
                stray = buf.find(closing, 0, at if at >= 0 else len(buf))
                if stray >= 0:
                    self._emit(buf[:stray])
                    if self._holds_call():  # the text before it began a call: the call's
                        buf = buf[stray:]
                        continue
                    buf = buf[stray + len(closing) :]
                    continue
            if at >= 0:
                self._emit(buf[:at])
                if self._holds_call():  # the text before it began a call: the call's
                    buf = buf[at:]
                    continue
                if self._scanner is not None and not self._thinking:
                    self._answer(self._scanner.finish())
                self._close()
                self._thinking = not self._thinking
                self._gate()
                buf = buf[at + len(tag.text) :]
                continue
            keep = tag.tail(buf)
            if self._strays and not self._thinking:
                keep = max(keep, self._tags[1].tail(buf))
            self._emit(buf[: len(buf) - keep])
            buf = buf[len(buf) - keep :]
            break
        self._pending = buf

    def _emit(self, text: str) -> None:
        if not text:
            return
        scanner = self._scanner  # (the scanner's `passes`, kept at hand: this runs per token)
        if scanner is None or ((one := self._one) and one not in text):
            self._lane_text(text)
            return
        free = self._free
        if not one and free is not None and free.isdisjoint(text):
            self._lane_text(text)
            return
        pieces = scanner.feed(text)  # (not thinking: thinking sends no text here)
        if pieces:
            self._answer(pieces)
        if scanner.idle:  # `_gate`, inlined: this runs per token of a held call
            self._free, self._one = scanner.firsts, scanner.first
        else:
            self._free, self._one = None, ""

    def _holds_call(self) -> bool:
        """Whether a call is held: text goes to it whole, a think tag in it being its text."""
        return self._scanner is not None and not self._thinking and self._scanner.in_call

    def _call_text(self, text: str) -> str:
        """Give the held call `text`; what follows the call's end, once it ended."""
        scanner = self._scanner
        assert scanner is not None
        pieces, rest = scanner.feed_call(text)
        if pieces:
            self._answer(pieces)
        if not scanner.in_call:  # `_gate`: the call ended, the scanner may let text by
            self._free, self._one = (scanner.firsts, scanner.first) if scanner.idle else (None, "")
        return rest

    def _gate(self) -> None:
        """Keep `_free`: the characters that send text to the scanner (none while thinking:
        thinking holds no call); None while the scanner holds text, when all of it goes there.
        `_one` is the character when there is just one (`in` is the quicker test), else ""."""
        scanner = self._scanner
        if scanner is None or self._thinking:
            self._free, self._one = frozenset(), ""
        else:
            self._free = scanner.firsts if scanner.idle else None
            self._one = scanner.first if scanner.idle else ""

    def _answer(self, pieces: list[str | Scanned]) -> None:
        for piece in pieces:
            if isinstance(piece, str):
                self._lane_text(piece)
            elif piece.calls:
                self._close(ended=True)
                for call in piece.calls:
                    self._call(call)
            else:
                self._close(ended=True)
                self._events.append(invalid_call(piece))

    def _call(self, call: ToolCall) -> None:
        self._index += 1
        self.called = True
        recipient = recipient_of(call.name)
        lane = Lane.TOOL_CALL
        self._events.append(
            MessageStarted(self._index, Role.ASSISTANT, None, "commentary", recipient, "json", lane)
        )
        self._events.append(ContentDelta(self._index, call.arguments, lane))
        message = _message(
            call.arguments, channel="commentary", recipient=recipient, content_type="json"
        )
        self.messages.append(message)
        self._events.append(MessageDone(self._index, message, lane, True, tuple(self._ids)))
        self._ids = []

    def _lane_text(self, text: str) -> None:
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

    def _close(self, ended: bool = False) -> None:
        """Close the open message; `ended`: something followed it (it was not cut)."""
        if self._open_lane is None:
            return
        channel = "analysis" if self._open_lane is Lane.ANALYSIS else "final"
        message = _message("".join(self._text), channel=channel)
        self.messages.append(message)
        complete = ended or self.stop is not None or self._open_lane is Lane.ANALYSIS
        self._events.append(
            MessageDone(self._index, message, self._open_lane, complete, tuple(self._ids))
        )
        self._open_lane, self._text, self._ids = None, [], []
