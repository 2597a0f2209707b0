"""The machinery every Harmony stream parser shares: state, events, message bodies.

Guarantees: bytes that do not decode yet are buffered per message, never dropped or
replaced mid-stream; every message is reported by `MessageStarted`, `ContentDelta`s and
one `MessageDone`; `finish()` always ends the turn with exactly one `TurnDone`; a message
whose visibility is undecided (`pending`) streams no visible deltas. The rules that read
tokens (tolerant or strict) live in subclasses.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from app.domain.events import (
    ContentDelta,
    MessageDone,
    MessageStarted,
    ParseEvent,
    ParseIssue,
    Severity,
    StopReason,
    TurnDone,
)
from app.domain.messages import Author, Message, Role, TextContent
from app.domain.visibility import Lane, route
from app.errors import ErrorCode
from app.harmony import encoding as enc
from app.harmony.body import Body
from app.harmony.header import Header, Segment

TERMINAL = {
    enc.RETURN: StopReason.RETURN,
    enc.CALL: StopReason.CALL,
    enc.END_OF_TEXT: StopReason.END_OF_TEXT,
}

REPLACEMENT_ID = 3251  # o200k's one token for U+FFFD (b'\xef\xbf\xbd')


class ParserState(StrEnum):
    """Where the parser is in the token stream."""

    EXPECT_START = "expect_start"
    HEADER = "header"
    CONTENT = "content"
    DONE = "done"  # a stop token was seen; later tokens are checked, not trusted


@dataclass
class _Open:
    """The message being read."""

    index: int
    header: Header
    lane: Lane
    pending: bool  # visibility waits for the terminator; deltas are withheld
    body: Body = field(default_factory=Body)
    token_ids: list[int] = field(default_factory=list)


@dataclass
class ParseResult:
    """Everything one parse produced."""

    messages: list[Message]
    issues: list[ParseIssue]
    stop: StopReason
    events: list[ParseEvent]


class ParserBase:
    """State and event plumbing for one generation (one parser per generation, or `reset()`)."""

    fast_body: ClassVar[bool] = True  # ordinary tokens inside a body skip `_step`

    def __init__(
        self,
        encoding: enc.HarmonyEncoding | None = None,
        *,
        role: Role | None = Role.ASSISTANT,
        known_tools: Collection[str] = (),
    ) -> None:
        self.encoding = encoding or enc.load_encoding()
        self.role = role
        self.known_tools = frozenset(known_tools)
        self._token_bytes = self.encoding.token_table
        self.reset()

    # --- public state ---------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything: state, messages, pending bytes and the expected role."""
        self.messages: list[Message] = []
        self.issues: list[ParseIssue] = []
        self.lanes: list[Lane] = []
        self.tokens: list[int] = []
        self.stop: StopReason | None = None
        self.finished = False
        self._events: list[ParseEvent] = []
        self._open: _Open | None = None
        self._segments: list[Segment | bytearray] = []
        self._header_ids: list[int] = []
        self._next_role: Role | None = self.role
        self._ignoring = False
        self._final_by_end = False
        self.state = ParserState.HEADER if self.role is not None else ParserState.EXPECT_START

    @property
    def current_channel(self) -> str | None:
        return self._open.header.channel if self._open else None

    @property
    def current_recipient(self) -> str | None:
        return self._open.header.recipient if self._open else None

    @property
    def current_role(self) -> Role | None:
        return self._open.header.role if self._open else self._next_role

    @property
    def current_content(self) -> str:
        return self._open.body.text if self._open else ""

    # --- feeding --------------------------------------------------------------------

    def feed(self, token: int) -> list[ParseEvent]:
        """Consume one token id; return the events it caused."""
        m = self._open
        if not 0 <= token < enc.N_VOCAB:
            return self.feed_many([token])
        if token < enc.START_OF_TEXT and m is not None and self.fast_body:
            # The hot path while streaming: one ordinary token inside a message body.
            self.tokens.append(token)
            m.token_ids.append(token)
            text = m.body.feed(self._token_bytes[token])
            if text and not m.pending:
                return [ContentDelta(m.index, text, m.lane)]
            return []
        return self.feed_many([token])

    def feed_many(self, tokens: Iterable[int]) -> list[ParseEvent]:
        """Consume token ids; return the events they caused."""
        ids = tokens if isinstance(tokens, list) else list(tokens)
        self.tokens.extend(ids)
        if any(not 0 <= t < enc.N_VOCAB for t in ids):
            ids = [self._in_vocabulary(t) for t in ids]
        i, n = 0, len(ids)
        while i < n:
            if self.finished:
                self._issue(ErrorCode.PARSE_HEADER, f"{n - i} tokens after the end of the turn")
                break
            if self.state is ParserState.CONTENT and ids[i] < enc.START_OF_TEXT:
                j = i + 1
                while j < n and ids[j] < enc.START_OF_TEXT:
                    j += 1
                self._content_run(ids[i:j])
                i = j
                continue
            self._step(ids[i])
            i += 1
        return self._drain()

    def _in_vocabulary(self, token: int) -> int:
        """`token`, or U+FFFD's id for one the vocabulary does not have (as openai-harmony)."""
        if 0 <= token < enc.N_VOCAB:
            return token
        self._issue(
            ErrorCode.PARSE_HEADER, f"token id {token} is not in the vocabulary: read as U+FFFD"
        )
        return REPLACEMENT_ID

    def finish(self, reason: str = "") -> list[ParseEvent]:
        """The stream ended (stop token seen, length limit, cancel...): close the turn."""
        if self.finished:
            return self._drain()
        self._finish_rules(reason)
        stop = self.stop or StopReason.TRUNCATED
        self.stop = stop
        self.finished = True
        self.state = ParserState.DONE
        self._events.append(TurnDone(stop=stop, detail=reason))
        return self._drain()

    def parse(self, tokens: Iterable[int], reason: str = "") -> ParseResult:
        """Feed all of `tokens`, finish, and return the result."""
        events = self.feed_many(tokens) + self.finish(reason)
        return ParseResult(
            list(self.messages), list(self.issues), self.stop or StopReason.TRUNCATED, events
        )

    # --- events ---------------------------------------------------------------------

    def _drain(self) -> list[ParseEvent]:
        events, self._events = self._events, []
        return events

    def _issue(self, code: ErrorCode, text: str, severity: Severity = Severity.WARNING) -> None:
        index = self._open.index if self._open else None
        issue = ParseIssue(code=code, message=text, severity=severity, index=index)
        self.issues.append(issue)
        self._events.append(issue)

    def _start_message(self, header: Header, pending: bool) -> None:
        lane = route(header.role, header.channel, header.recipient)
        if pending:
            lane = Lane.ANALYSIS
        self._open = _Open(index=len(self.messages), header=header, lane=lane, pending=pending)
        self._open.token_ids.extend(self._header_ids)
        self._header_ids = []
        self._segments = []
        self.state = ParserState.CONTENT
        self._events.append(
            MessageStarted(
                index=self._open.index,
                role=header.role,
                name=header.name,
                channel=header.channel,
                recipient=header.recipient,
                content_type=header.content_type,
                lane=lane,
            )
        )

    def _delta(self, text: str) -> None:
        m = self._open
        if text and m is not None and not m.pending:
            self._events.append(ContentDelta(index=m.index, text=text, lane=m.lane))

    def _content_run(self, ids: list[int]) -> None:
        m = self._open
        assert m is not None
        m.token_ids.extend(ids)
        self._delta(m.body.feed(self.encoding.decode_bytes(ids)))

    def _close(self, terminator: int | None, complete: bool = True) -> Message:
        m = self._open
        assert m is not None
        if terminator is not None:
            m.token_ids.append(terminator)
        self._delta(m.body.close())
        h = m.header
        message = Message(
            author=Author(role=h.role, name=h.name),
            content=(TextContent(text=m.body.text),),
            channel=h.channel,
            recipient=h.recipient,
            content_type=h.content_type,
        )
        lane = route(h.role, h.channel, h.recipient) if m.pending or not complete else m.lane
        if m.pending and lane is not Lane.ANALYSIS:
            lane = self._resolved_lane(message, lane)
        self.messages.append(message)
        self.lanes.append(lane)
        self._events.append(
            MessageDone(
                index=m.index,
                message=message,
                lane=lane,
                complete=complete,
                token_ids=tuple(m.token_ids),
            )
        )
        self._open = None
        self.state = ParserState.EXPECT_START
        return message

    def _resolved_lane(self, message: Message, lane: Lane) -> Lane:
        """The lane of a message whose visibility waited for its terminator."""
        return lane

    def _step(self, token: int) -> None:
        """Consume one token that the body fast path did not take."""
        raise NotImplementedError

    def _finish_rules(self, reason: str) -> None:
        """Close whatever is open when the stream ends."""
        raise NotImplementedError

    def _default_role(self) -> Role:
        return self.role or Role.ASSISTANT

    def _enter_header(self, role: Role | None, first: Segment | None = None) -> None:
        self.state = ParserState.HEADER
        self._next_role = role
        self._segments = [] if first is None else [first]
        self._header_ids = []
