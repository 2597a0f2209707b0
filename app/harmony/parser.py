"""Incremental Harmony parser: generated token ids in, typed events out.

Guarantees:
- Consumes one token id at a time (or a batch); never raises on any sequence of ids.
- Bytes that do not decode yet are buffered per message, never dropped or replaced mid-stream.
- Never marks text as visible unless its channel says so: a message with a missing or
  unknown channel stays hidden (analysis) until its terminator decides; only `<|return|>`
  makes such text the answer.
- Malformed output (the W01–W39 catalogue) becomes messages plus `ParseIssue` events with
  OpenChatML codes; `TurnDone` always closes the turn when `finish()` is called.
- `strict=True` reproduces openai-harmony 0.0.8's strict parser: identical messages on
  input it accepts, and an issue (not an exception) where it would raise.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

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
from app.domain.visibility import Lane, is_tool_recipient, route
from app.errors import ErrorCode
from app.harmony import encoding as enc
from app.harmony.body import Body
from app.harmony.header import Header, Segment, reference_header, tolerant_header

_TERMINAL = {enc.RETURN: StopReason.RETURN, enc.CALL: StopReason.CALL}
_TERMINAL[enc.END_OF_TEXT] = StopReason.END_OF_TEXT
_REFERENCE_STOPS = frozenset({enc.RETURN, enc.END, enc.CALL})
_PROSE_CHARS = 160
_PROSE_WORDS = 8


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


class StreamParser:
    """Parses one generation (create one per generation, or call `reset()`)."""

    def __init__(
        self,
        encoding: enc.HarmonyEncoding | None = None,
        *,
        role: Role | None = Role.ASSISTANT,
        strict: bool = False,
        known_tools: Collection[str] = (),
    ) -> None:
        self.encoding = encoding or enc.load_encoding()
        self.role = role
        self.strict = strict
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
        if token < enc.START_OF_TEXT and m is not None and not self.strict:
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

    def finish(self, reason: str = "") -> list[ParseEvent]:
        """The stream ended (stop token seen, length limit, cancel...): close the turn."""
        if self.finished:
            return self._drain()
        if self.strict:
            self._finish_strict()
        else:
            self._finish_tolerant(reason)
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
        if m.pending and lane is not Lane.ANALYSIS and not self.strict:
            lane = self._check_repeat(message, lane)
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

    def _check_repeat(self, message: Message, lane: Lane) -> Lane:
        if lane is Lane.ANSWER and any(
            m.channel == "final" and m.text == message.text for m in self.messages
        ):
            self._issue(ErrorCode.PARSE_HEADER, "a repeated final answer was hidden")
            return Lane.ANALYSIS
        return lane

    # --- the state machine ----------------------------------------------------------

    def _step(self, token: int) -> None:
        if self.strict:
            self._step_strict(token)
        elif self.state is ParserState.EXPECT_START:
            self._expect_start(token)
        elif self.state is ParserState.HEADER:
            self._header_token(token)
        elif self.state is ParserState.CONTENT:
            self._content_control(token)
        else:
            self._after_stop(token)

    def _default_role(self) -> Role:
        return self.role or Role.ASSISTANT

    def _enter_header(self, role: Role | None, first: Segment | None = None) -> None:
        self.state = ParserState.HEADER
        if self.strict:
            self._ignoring = False
        self._next_role = role
        self._segments = [] if first is None else [first]
        self._header_ids = []

    def _expect_start(self, token: int) -> None:
        if token == enc.START:
            self._enter_header(None)
            self._header_ids.append(token)
        elif token == enc.CHANNEL or token < enc.START_OF_TEXT:
            self._issue(ErrorCode.PARSE_HEADER, "a message began without <|start|>", Severity.DEBUG)
            self._enter_header(self._default_role())
            self._header_token(token)
        elif token == enc.MESSAGE:
            self._issue(ErrorCode.PARSE_CHANNEL_MISSING, "a message began with no header")
            self._start_message(Header(role=self._default_role()), pending=True)
            self._open.token_ids.append(token)  # type: ignore[union-attr]
        elif token in _TERMINAL:
            self._terminal(token)
        else:
            self._issue(ErrorCode.PARSE_HEADER, f"stray control token {token} between messages")

    def _terminal(self, token: int) -> None:
        if self.stop is None:
            self.stop = _TERMINAL[token]
        self.state = ParserState.DONE

    def _header_text(self) -> str:
        return "".join(
            s.decode("utf-8", errors="replace") for s in self._segments if isinstance(s, bytearray)
        )

    def _header_token(self, token: int) -> None:
        if token < enc.START_OF_TEXT:
            self._header_ids.append(token)
            last = self._segments[-1] if self._segments else None
            if isinstance(last, bytearray):
                last.extend(self.encoding.token_bytes(token))
            else:
                self._segments.append(bytearray(self.encoding.token_bytes(token)))
            if self._looks_like_prose():
                self._prose_to_body()
        elif token == enc.MESSAGE:
            self._header_ids.append(token)
            self._open_from_header()
        elif token in (enc.CHANNEL, enc.CONSTRAIN):
            self._header_ids.append(token)
            self._segments.append(token)
        elif token == enc.START:
            self._restart_header()
            self._header_ids.append(token)
        elif token in (enc.END, *_TERMINAL):
            self._salvage_header(token)
        else:
            self._header_ids.append(token)
            self._issue(ErrorCode.PARSE_HEADER, f"control token {token} inside a header")

    def _looks_like_prose(self) -> bool:
        text = self._header_text()
        return "\n" in text or len(text) > _PROSE_CHARS or len(text.split()) > _PROSE_WORDS

    def _segments_plain(self) -> list[Segment]:
        return [
            bytes(s).decode("utf-8", "replace") if isinstance(s, bytearray) else s
            for s in self._segments
        ]

    def _read_header(self, segments: list[Segment]) -> Header:
        header = tolerant_header(segments, self._next_role, self.known_tools)
        for problem in header.problems:
            self._issue(ErrorCode.PARSE_HEADER, problem)
        return header

    def _foreign(self, header: Header) -> bool:
        if self.role is not Role.ASSISTANT or header.role is Role.ASSISTANT:
            return False
        self._issue(
            ErrorCode.PARSE_HEADER,
            f"the model began a {header.name or header.role.value} message it does not own;"
            " the rest of the output is ignored",
            Severity.ERROR,
        )
        self.stop = self.stop or StopReason.FOREIGN_ROLE
        self._ignoring = True
        self.state = ParserState.DONE
        self._segments, self._header_ids = [], []
        return True

    def _open_from_header(self) -> None:
        header = self._read_header(self._segments_plain())
        if self._foreign(header):
            return
        if header.body:
            self._issue(ErrorCode.PARSE_HEADER, f"text in a header was ignored: {header.body!r}")
        pending = header.channel is None and not is_tool_recipient(header.recipient)
        if header.channel is None and header.role is Role.ASSISTANT and pending:
            self._issue(ErrorCode.PARSE_CHANNEL_MISSING, "an assistant message has no channel")
        if header.channel == "final" and self._final_by_end:
            pending = True  # W16: a final after a final closed by <|end|> waits for its end
        self._start_message(header, pending)

    def _split_prose(self) -> tuple[list[Segment], str]:
        """Header segments, and the text after the last header word (the body)."""
        segments = self._segments_plain()
        if not segments or not isinstance(segments[-1], str):
            return segments, ""
        text = segments[-1]
        head: list[Segment] = list(segments[:-1])
        follows_marker = bool(head) and head[-1] in (enc.CHANNEL, enc.CONSTRAIN)
        if follows_marker or not head:
            stripped = text.lstrip()
            word = stripped.split(maxsplit=1)[0] if stripped else ""
            keep_word = follows_marker or (
                self._next_role is None or word == self._default_role().value
            )
            if keep_word and word:
                head.append(word)
                text = stripped[len(word) :]
        return head, text.lstrip(" ")

    def _prose_to_body(self) -> None:
        head, body = self._split_prose()
        self._issue(ErrorCode.PARSE_CHANNEL_MISSING, "text with no message header")
        header = self._read_header(head)
        if self._foreign(header):
            return
        self._start_message(header, pending=header.channel != "final")
        self._delta(self._open.body.feed(body.encode()))  # type: ignore[union-attr]

    def _restart_header(self) -> None:
        if self._segments:
            text = self._header_text().strip()
            detail = f": {text!r}" if text else ""
            self._issue(ErrorCode.PARSE_HEADER, f"an unfinished header was dropped{detail}")
        self._enter_header(None)

    def _salvage_header(self, token: int) -> None:
        head, body = self._split_prose()
        header = self._read_header(head)
        if self._foreign(header):
            return
        if header.channel is None and header.role is Role.ASSISTANT:
            self._issue(ErrorCode.PARSE_CHANNEL_MISSING, "text with no channel before a stop token")
        else:
            self._issue(ErrorCode.PARSE_HEADER, "a header ended without <|message|>")
        self._start_message(header, pending=True)
        self._open.body.feed(body.encode())  # type: ignore[union-attr]
        self._content_control(token)

    def _content_control(self, token: int) -> None:
        m = self._open
        assert m is not None
        if token == enc.END:
            self._close_resolved(token, on_unknown="analysis")
            if m.header.channel == "final":
                self._final_by_end = True
        elif token in _TERMINAL:
            self._close_resolved(token, on_unknown="final" if token == enc.RETURN else "commentary")
            if token == enc.CALL and not is_tool_recipient(m.header.recipient):
                self._issue(ErrorCode.PARSE_HEADER, "<|call|> ended a message with no recipient")
            self._terminal(token)
        elif token in (enc.START, enc.CHANNEL):
            self._issue(ErrorCode.PARSE_HEADER, "a message ended without <|end|>", Severity.DEBUG)
            self._close_resolved(None, on_unknown="analysis")
            if token == enc.START:
                self._enter_header(None)
            else:
                self._enter_header(self._default_role(), token)
            self._header_ids.append(token)
        else:
            m.token_ids.append(token)
            self._issue(ErrorCode.PARSE_HEADER, f"control token {token} inside a message body")

    def _close_resolved(self, terminator: int | None, on_unknown: str) -> None:
        m = self._open
        assert m is not None
        h = m.header
        if h.channel is None and h.role is Role.ASSISTANT and on_unknown != "analysis":
            raw = h.channel_raw or "none"
            self._issue(
                ErrorCode.PARSE_HEADER,
                f"channel {raw!r} read as {on_unknown!r} from its terminator",
            )
            h.channel = on_unknown
        message = self._close(terminator)
        self._check_closed(message)

    def _check_closed(self, message: Message) -> None:
        lane = self.lanes[-1]
        if lane is Lane.TOOL_CALL:
            recipient = message.recipient or ""
            if self.known_tools and recipient not in self.known_tools:
                self._issue(
                    ErrorCode.CALL_SCHEMA,
                    f"the model called {recipient!r}, which is not an enabled tool",
                )
            if recipient.startswith("functions."):
                try:
                    json.loads(message.text)
                except ValueError as exc:
                    self._issue(
                        ErrorCode.BODY_CONSTRAINT_VIOLATION,
                        f"tool arguments are not valid JSON: {exc}",
                    )
        elif (
            lane is Lane.ANSWER and _TEXTUAL_CALL in message.text and "<|message|>" in message.text
        ):
            self._issue(
                ErrorCode.CALL_SCHEMA,
                "the answer holds a tool call written as text; nothing was run",
            )

    def _after_stop(self, token: int) -> None:
        if self._ignoring:
            return
        if token == enc.START:
            self._issue(
                ErrorCode.PARSE_HEADER, "the model went on after a stop token", Severity.DEBUG
            )
            self._enter_header(None)
            self._header_ids.append(token)
        else:
            self._issue(ErrorCode.PARSE_HEADER, "tokens after a stop token were ignored")
            self._ignoring = True

    def _finish_tolerant(self, reason: str) -> None:
        why = reason or "the output ended without a stop token"
        if self.state is ParserState.CONTENT and self._open is not None:
            call = is_tool_recipient(self._open.header.recipient)
            note = " (an interrupted tool call, never to be run)" if call else ""
            self._issue(ErrorCode.STREAM_TRUNCATED, f"{why}{note}")
            self._close(None, complete=False)
        elif self.state is ParserState.HEADER and self._segments:
            self._issue(ErrorCode.STREAM_TRUNCATED, f"{why}; an unfinished header was dropped")
        elif self.stop is None:
            self._issue(ErrorCode.STREAM_TRUNCATED, why)
        answered = any(lane is Lane.ANSWER for lane in self.lanes)
        if self.role is Role.ASSISTANT and self.stop is not StopReason.CALL and not answered:
            self._issue(ErrorCode.PARSE_CHANNEL_MISSING, "the model produced no final answer")

    # --- strict: the reference rules ------------------------------------------------

    def _step_strict(self, token: int) -> None:
        if self.state in (ParserState.EXPECT_START, ParserState.DONE):
            if token == enc.START:
                self._enter_header(None)
                self._header_ids.append(token)
            elif not self._ignoring:
                self._ignoring = True  # one issue per run of unexpected tokens
                self._issue(
                    ErrorCode.PARSE_HEADER,
                    f"Unexpected token {token} while expecting start token {enc.START}",
                    Severity.ERROR,
                )
        elif self.state is ParserState.HEADER:
            self._header_ids.append(token)
            if token == enc.MESSAGE:
                self._strict_header()
            else:
                self._segments.append(token)
        elif token in _REFERENCE_STOPS:
            self._close(token)
            if token in _TERMINAL and self.stop is None:
                self.stop = _TERMINAL[token]
        else:
            self._content_run([token])

    def _strict_header(self) -> None:
        raw = self.encoding.decode_bytes(t for t in self._segments if isinstance(t, int))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        header = (
            reference_header(text, self._next_role)
            if text is not None
            else "could not decode header"
        )
        if isinstance(header, str):
            self._issue(ErrorCode.PARSE_HEADER, header, Severity.ERROR)
            header = Header(role=self._next_role or Role.ASSISTANT)
        self._next_role = None
        self._start_message(header, pending=False)

    def _finish_strict(self) -> None:
        if self.state is ParserState.CONTENT:
            self._close(None)
        elif self.state is ParserState.HEADER:
            self._issue(
                ErrorCode.STREAM_TRUNCATED,
                "Unexpected EOS while waiting for message header to complete",
                Severity.ERROR,
            )


_TEXTUAL_CALL = "to=functions."


def parse_tokens(
    tokens: Iterable[int],
    *,
    role: Role | None = Role.ASSISTANT,
    strict: bool = False,
    known_tools: Collection[str] = (),
    encoding: enc.HarmonyEncoding | None = None,
) -> ParseResult:
    """Parse a whole token sequence (a completion, or messages that begin with `<|start|>`)."""
    parser = StreamParser(encoding, role=role, strict=strict, known_tools=known_tools)
    return parser.parse(tokens)
