"""Strict Harmony parsing: openai-harmony 0.0.8's strict rules, without its exceptions.

Guarantees: on any input the reference accepts, the messages are identical to the
reference's; where the reference would raise, a `ParseIssue` carries its error text and
parsing goes on (the parser never raises).
"""

from __future__ import annotations

from typing import ClassVar

from app.domain.events import Severity
from app.domain.messages import Role
from app.errors import ErrorCode
from app.harmony import encoding as enc
from app.harmony.header import Header, Segment, reference_header
from app.harmony.stream import TERMINAL, ParserBase, ParserState

_REFERENCE_STOPS = frozenset({enc.RETURN, enc.END, enc.CALL})


class StrictStreamParser(ParserBase):
    """The reference's rules: every message needs `<|start|>`, a header and `<|message|>`."""

    fast_body: ClassVar[bool] = False  # special tokens inside bodies are text here

    def _enter_header(self, role: Role | None, first: Segment | None = None) -> None:
        super()._enter_header(role, first)
        self._ignoring = False

    def _step(self, token: int) -> None:
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
            if token in TERMINAL and self.stop is None:
                self.stop = TERMINAL[token]
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

    def _finish_rules(self, reason: str) -> None:
        if self.state is ParserState.CONTENT:
            self._close(None)
        elif self.state is ParserState.HEADER:
            self._issue(
                ErrorCode.STREAM_TRUNCATED,
                "Unexpected EOS while waiting for message header to complete",
                Severity.ERROR,
            )
