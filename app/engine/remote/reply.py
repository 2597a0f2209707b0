"""A streamed chat-completion reply folded into the events a local model gives.

Guarantees: answer text, reasoning in any of the shapes servers use (`remote_wire`), tool calls
and Harmony markup that a server passes through as text each become `MessageStarted`,
`ContentDelta` and `MessageDone` events with the reply's own message indices; markup is read
by the same token parser as local output (`HarmonyText`), so analysis never shows as answer
text; a gpt-oss reply's first text waits for markup only up to `_GPT_OSS_WAIT` characters;
`end` closes what the stream left open (complete or cut) and emits the server's tool calls.
Calls come from the API's structured `tool_calls`; a call written as text becomes one only
where the user said so for the endpoint: with a call format (`calls`: the endpoint's model
writes calls as text the server passes through), plain answer text goes through that format's
scanner, as a local model's does — a call becomes a call message, markup that is no valid call
an error `ParseIssue`, never answer text; Harmony markup's calls are calls only with
`harmony_calls` (`Endpoint.text_calls`), else they stay text (`text_calls.TextCalls`: shown,
said, never run).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.domain.events import (
    ContentDelta,
    MessageDone,
    MessageStarted,
    ParseEvent,
    ParseIssue,
    StopReason,
    TurnDone,
)
from app.domain.messages import Message, Role
from app.domain.visibility import Lane, route
from app.engine.remote.wire import REASONING_FIELDS, delta_field, typed_parts
from app.engine.session import ChatEvent
from app.harmony.text_stream import HarmonyText
from app.templates.calls.format import recipient_of
from app.templates.calls.scanner import CallScanner, Scanned, invalid_call

if TYPE_CHECKING:
    from app.engine.remote.text_calls import TextCalls

_MARKERS = (
    "<|channel|>",
    "<|start|>",
    "<|message|>",
    "<|constrain|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
)


_GPT_OSS_WAIT = 240  # characters of a gpt-oss reply's first text that may precede its markup


def mode_of(head: str, gpt_oss: bool, final: bool = False) -> str | None:
    """ "harmony" when a reply's first text holds Harmony markup, "plain" once it cannot, None
    while unsure. A gpt-oss model's raw output may put a header or a whole headerless message
    first (` to=functions.f<|channel|>…`, W01, W24), so its text waits up to `_GPT_OSS_WAIT`
    characters for markup; a server that parses Harmony itself sends plain text, which then
    streams as the answer."""
    text = head.lstrip()
    if any(m in head for m in _MARKERS):
        return "harmony"
    if final:  # a short gpt-oss reply is read as its raw output would be, by the parser
        return "harmony" if gpt_oss else "plain"
    if not text or any(m.startswith(text) for m in _MARKERS):
        return None
    if gpt_oss and len(text) < _GPT_OSS_WAIT:
        return None
    return "plain"


@dataclass
class _Open:
    lane: Lane
    channel: str
    recipient: str | None
    content_type: str | None
    parts: list[str] = field(default_factory=list)


@dataclass
class ReplyStream:
    """What one streamed reply has produced so far; `chunk` folds each chunk in, `end` closes
    what is open when the stream ends."""

    gpt_oss: bool = False  # the endpoint serves gpt-oss: its first text may wait for markup
    messages: list[Message] = field(default_factory=list)
    open: _Open | None = None  # the message being written
    mode: str | None = None  # "plain", or "harmony" (a server passing gpt-oss markup through)
    pending: str = ""  # the reply's first text, until it shows which
    harmony: HarmonyText | None = None  # the token parser, once the text shows it is markup
    harmony_index: dict[int, int] = field(default_factory=dict)  # parser's index → the reply's
    scanner: CallScanner | None = None  # the model's call format, for calls passed as text
    scanned_calls: bool = False  # calls were read from the text by `scanner`
    harmony_calls: bool = False  # Harmony markup's calls are calls (else they stay text)
    text_calls: TextCalls = field(init=False)

    def __post_init__(self) -> None:
        from app.engine.remote.text_calls import TextCalls  # not on the window's start path

        self.text_calls = TextCalls(allowed=self.harmony_calls)

    @property
    def ended_in_calls(self) -> bool:
        """Calls the server returned as tool_calls, markup that ended in `<|call|>` (where
        Harmony calls are read), or calls the endpoint's call format read."""
        stop = self.harmony.parser.stop if self.harmony is not None else None
        markup_call = self.harmony_calls and stop is StopReason.CALL
        return bool(self.calls) or markup_call or self.scanned_calls

    calls: dict[int, dict[str, str]] = field(default_factory=dict)  # index → id, name, arguments
    finish: str | None = None
    usage: Any = None
    response_id: str = ""
    logprobs: list[tuple[str, float]] = field(default_factory=list)
    top: list[tuple[tuple[str, float], ...]] = field(default_factory=list)
    chunks: int = 0  # content chunks: the generated count where the server reports no usage
    first_token_ms: float = 0.0

    def end(self, start: float, complete: bool) -> Iterator[ChatEvent]:
        """Close what the stream left open, then the server's tool calls as messages."""
        yield from self._end_content(start, complete)
        yield from self._close_open(complete=complete)
        yield from self._emit_calls(start)

    def chunk(self, chunk: Any, start: float) -> Iterator[ChatEvent]:
        """One streamed chunk: its scores, reasoning, content and tool-call pieces."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        self.response_id = getattr(chunk, "id", "") or self.response_id
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            self._scores(choice)
            reasoning = "".join(delta_field(delta, name) for name in REASONING_FIELDS)
            if reasoning:
                yield from self._text(Lane.ANALYSIS, reasoning, start)
            yield from self._delta_content(getattr(delta, "content", None), start)
            for call in getattr(delta, "tool_calls", None) or ():
                self._call_piece(call, start)
            if choice.finish_reason:
                self.finish = choice.finish_reason

    def _scores(self, choice: Any) -> None:
        """The chunk's token log-probabilities, and the alternatives, when the server sends them."""
        for item in getattr(getattr(choice, "logprobs", None), "content", None) or ():
            self.logprobs.append((str(item.token), float(item.logprob)))
            others = getattr(item, "top_logprobs", None) or ()
            self.top.append(tuple((str(o.token), float(o.logprob)) for o in others))

    def _delta_content(self, content: Any, start: float) -> Iterator[ChatEvent]:
        if isinstance(content, list):  # typed parts (Databricks serving endpoints)
            for is_reasoning, text in typed_parts(content):
                if is_reasoning:
                    yield from self._text(Lane.ANALYSIS, text, start)
                else:
                    yield from self._content(text, start)
        elif content:
            yield from self._content(content, start)

    def _call_piece(self, call: Any, start: float) -> None:
        """A piece of a streamed tool call, joined to the call at its index."""
        if not self.first_token_ms:
            self.first_token_ms = (time.monotonic() - start) * 1000
        slot = self.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
        function = call.function
        slot["id"] = call.id or slot["id"]
        if function is not None:
            name = function.name or ""
            # some servers repeat the whole name in every chunk, others send it once
            if not slot["name"] or name.startswith(slot["name"]):
                slot["name"] = name or slot["name"]
            else:
                slot["name"] += name
            slot["arguments"] += function.arguments or ""

    def _content(self, text: str, start: float) -> Iterator[ChatEvent]:
        """Answer text; or, from a server that passes gpt-oss output through, Harmony markup
        read here so that analysis never shows as answer text."""
        if self.mode is None:
            self.pending += text
            mode = mode_of(self.pending, self.gpt_oss)
            if mode is None:
                return  # it may still turn out to be markup
            self.mode = mode
            text, self.pending = self.pending, ""
        if self.mode == "plain":
            if self.scanner is None:
                yield from self._text(Lane.ANSWER, text, start)
            else:
                yield from self._scanned(self.scanner.feed(text), start)
            return
        self.chunks += 1
        if self.harmony is None:
            self.harmony = HarmonyText()
        yield from self._parsed(self.harmony.feed(text), start)

    def _parsed(self, events: list[ParseEvent], start: float) -> Iterator[ChatEvent]:
        """The token parser's events as this reply's (indices counted in the reply); its
        `TurnDone` says how the model's output ended, as a local parser's does."""
        for event in self.text_calls.events(events):
            if isinstance(event, ParseIssue | TurnDone):
                yield event
                continue
            if isinstance(event, MessageStarted):
                yield from self._close_open(complete=True)
                self.harmony_index[event.index] = len(self.messages)
            elif isinstance(event, ContentDelta) and not self.first_token_ms:
                self.first_token_ms = (time.monotonic() - start) * 1000
            if isinstance(event, MessageStarted | ContentDelta | MessageDone):
                index = self.harmony_index.get(event.index, len(self.messages))
                yield dataclasses.replace(event, index=index)
                if isinstance(event, MessageDone):
                    self.messages.append(event.message)

    def _end_content(self, start: float, complete: bool) -> Iterator[ChatEvent]:
        """What the reply's text left open when the stream ended."""
        if self.mode is None and self.pending:
            self.mode = mode_of(self.pending, self.gpt_oss, final=True)
            text, self.pending = self.pending, ""
            yield from self._content(text, start)
        if self.mode == "harmony" and self.harmony is not None:
            yield from self._parsed(self.harmony.finish(complete), start)
        if self.mode == "plain" and self.scanner is not None:
            yield from self._scanned(self.scanner.finish(), start)

    def _scanned(self, pieces: list[str | Scanned], start: float) -> Iterator[ChatEvent]:
        """Answer text, calls and invalid calls as the scanner read them."""
        for piece in pieces:
            if isinstance(piece, str):
                yield from self._text(Lane.ANSWER, piece, start)
                continue
            yield from self._close_open(complete=True)
            for call in piece.calls:
                self.scanned_calls = True
                yield from self._start("commentary", recipient_of(call.name), "json")
                yield from self._append(call.arguments, start)
                yield from self._close_open(complete=True)
            if piece.invalid:
                yield invalid_call(piece)

    def _text(self, lane: Lane, text: str, start: float) -> Iterator[ChatEvent]:
        self.chunks += 1
        if self.open is None or self.open.lane is not lane:
            yield from self._close_open(complete=True)
            yield from self._start("analysis" if lane is Lane.ANALYSIS else "final")
        yield from self._append(text, start)

    def _start(
        self,
        channel: str,
        recipient: str | None = None,
        content_type: str | None = None,
    ) -> Iterator[ChatEvent]:
        lane = route(Role.ASSISTANT, channel, recipient)
        self.open = _Open(lane, channel, recipient, content_type)
        index = len(self.messages)
        yield MessageStarted(index, Role.ASSISTANT, None, channel, recipient, content_type, lane)

    def _append(self, text: str, start: float) -> Iterator[ChatEvent]:
        assert self.open is not None
        if not self.first_token_ms:
            self.first_token_ms = (time.monotonic() - start) * 1000
        self.open.parts.append(text)
        yield ContentDelta(len(self.messages), text, self.open.lane)

    def _close_open(self, complete: bool) -> Iterator[ChatEvent]:
        o = self.open
        if o is None:
            return
        message = Message.of(
            Role.ASSISTANT,
            "".join(o.parts),
            channel=o.channel,
            recipient=o.recipient,
            content_type=o.content_type,
        )
        yield MessageDone(len(self.messages), message, o.lane, complete, ())
        self.messages.append(message)
        self.open = None

    def _emit_calls(self, start: float) -> Iterator[ChatEvent]:
        for _, call in sorted(self.calls.items()):
            recipient = f"functions.{call['name']}"
            yield from self._start("commentary", recipient, "<|constrain|>json")
            yield from self._append(call["arguments"], start)
            yield from self._close_open(complete=True)


__all__ = ["ReplyStream", "mode_of"]
