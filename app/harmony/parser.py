"""Incremental Harmony parser: generated token ids in, typed events out.

Guarantees:
- Consumes one token id at a time (or a batch); never raises on any sequence of ids.
- Bytes that do not decode yet are buffered per message, never dropped or replaced mid-stream.
- Never marks text as visible unless its channel says so: a message with a missing or
  unknown channel stays hidden (analysis) until its terminator decides; only `<|return|>`
  makes such text the answer.
- Malformed output (the W01–W39 catalogue) becomes messages plus `ParseIssue` events with
  OpenChatML codes; `TurnDone` always closes the turn when `finish()` is called.
- `make_parser(strict=True)` gives the reference's strict rules instead (`strict.py`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable

from app.domain.events import Severity, StopReason
from app.domain.messages import Message, Role
from app.domain.visibility import Lane, is_tool_recipient
from app.errors import ErrorCode
from app.harmony import encoding as enc
from app.harmony.header import Header, Segment, tolerant_header
from app.harmony.stream import TERMINAL, ParserBase, ParseResult, ParserState
from app.harmony.strict import StrictStreamParser

_PROSE_CHARS = 160
_PROSE_WORDS = 8
_TEXTUAL_CALL = "to=functions."


class StreamParser(ParserBase):
    """The tolerant parser: what gpt-oss really writes, recovered into messages and issues."""

    def _resolved_lane(self, message: Message, lane: Lane) -> Lane:
        return self._check_repeat(message, lane)

    def _check_repeat(self, message: Message, lane: Lane) -> Lane:
        if lane is Lane.ANSWER and any(
            m.channel == "final" and m.text == message.text for m in self.messages
        ):
            self._issue(ErrorCode.PARSE_HEADER, "a repeated final answer was hidden")
            return Lane.ANALYSIS
        return lane

    def _step(self, token: int) -> None:
        if self.state is ParserState.EXPECT_START:
            self._expect_start(token)
        elif self.state is ParserState.HEADER:
            self._header_token(token)
        elif self.state is ParserState.CONTENT:
            self._content_control(token)
        else:
            self._after_stop(token)

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
        elif token in TERMINAL:
            self._terminal(token)
        else:
            self._issue(ErrorCode.PARSE_HEADER, f"stray control token {token} between messages")

    def _terminal(self, token: int) -> None:
        if self.stop is None:
            self.stop = TERMINAL[token]
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
        elif token in (enc.END, *TERMINAL):
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
        for note in header.notes:
            self._issue(ErrorCode.PARSE_HEADER, note, Severity.DEBUG)
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
        elif token in TERMINAL:
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

    def _finish_rules(self, reason: str) -> None:
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


def make_parser(
    encoding: enc.HarmonyEncoding | None = None,
    *,
    role: Role | None = Role.ASSISTANT,
    strict: bool = False,
    known_tools: Collection[str] = (),
) -> ParserBase:
    """A tolerant parser, or with `strict` the reference's rules."""
    kind = StrictStreamParser if strict else StreamParser
    return kind(encoding, role=role, known_tools=known_tools)


def parse_tokens(
    tokens: Iterable[int],
    *,
    role: Role | None = Role.ASSISTANT,
    strict: bool = False,
    known_tools: Collection[str] = (),
    encoding: enc.HarmonyEncoding | None = None,
) -> ParseResult:
    """Parse a whole token sequence (a completion, or messages that begin with `<|start|>`)."""
    parser = make_parser(encoding, role=role, strict=strict, known_tools=known_tools)
    return parser.parse(tokens)
