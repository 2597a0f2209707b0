"""A call format with no reader of its own, for checking a format's reader against it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, Piece, ToolCall
from app.templates.calls.reading import Read


class Afresh(CallFormat):
    """`fmt` with no reader of its own: the scanner reads each held call afresh, on every
    piece that holds one of `fmt`'s closer characters (what the scanner did before it asked)."""

    def __init__(self, fmt: CallFormat) -> None:
        self._fmt = fmt
        for key in ("name", "triggers", "closers", "opening", "leading", "ends", "think"):
            setattr(self, key, getattr(fmt, key))

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return self._fmt.declare(tools)

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        return self._fmt.write(calls)

    def result(self, name: str, text: str) -> list[Piece]:
        return self._fmt.result(name, text)

    def read(self, text: str, final: bool) -> Read:
        return self._fmt.read(text, final)

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return self._fmt.grammar_rest(tools)
