r"""Where the math is in a Markdown source: `$…$`, `$$…$$`, `\(…\)` and `\[…\]`; pure Python.

Guarantees: a span is never found inside a fenced code block or an inline code span, and a
backslash-escaped `\$` never opens or closes one; no span crosses a blank line or is empty;
`$$…$$` and `\[…\]` are display math, `$…$` and `\(…\)` inline; an inline `$…$` opens only where
a non-space follows the `$` and closes only where a non-space precedes the `$` and no digit
follows it, so prices ("$5 and $10", "costs $5.") stay text; spans come in source order, never
overlap, and each keeps its exact source, delimiters included (what copying gives back).
`replace_spans` swaps each span for what a function makes of it and leaves all else as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from app.ui.markdown.source import closes_fence, opens_fence

_NEXT = re.compile(r"[`\\$\n]")  # the only characters that can start or skip something
_BLANK = re.compile(r"\n[ \t]*\n")
_INLINE_STOP = re.compile(r"\\.|\$|\n[ \t]*\n", re.S)
_TICKS = re.compile(r"`+")


@dataclass(frozen=True)
class MathSpan:
    start: int
    end: int
    source: str  # text[start:end], delimiters included
    latex: str
    display: bool


def _closing(text: str, start: int, closer: str) -> int:
    """Where `closer` next occurs from `start` before any blank line (-1: nowhere)."""
    at = text.find(closer, start)
    if at < 0:
        return -1
    blank = _BLANK.search(text, start, at + len(closer))
    return -1 if blank is not None else at


def _inline_end(text: str, start: int) -> int:
    """The `$` that closes an inline formula opened at `start` (-1: none)."""
    after = text[start + 1 : start + 2]
    if not after or after.isspace():
        return -1
    for m in _INLINE_STOP.finditer(text, start + 1):
        token = m.group()
        if token.startswith("\n"):
            return -1
        if token != "$":
            continue  # an escaped character
        at = m.start()
        follows = text[at + 1 : at + 2]
        if not text[at - 1].isspace() and not follows.isdigit():
            return at
    return -1


def _backticks(text: str, start: int) -> int:
    """Past the inline code span whose opening backticks start at `start` (past the run
    itself when nothing closes it before a blank line)."""
    run = _TICKS.match(text, start)
    assert run is not None
    blank = _BLANK.search(text, run.end())
    for m in _TICKS.finditer(text, run.end(), len(text) if blank is None else blank.start()):
        if len(m.group()) == len(run.group()):
            return m.end()
    return run.end()


def _span(text: str, start: int, end: int, inner: tuple[int, int], display: bool) -> MathSpan:
    return MathSpan(start, end, text[start:end], text[inner[0] : inner[1]], display)


def _at(text: str, i: int) -> tuple[MathSpan | None, int]:
    """The span starting at `i`, if any, and where to look next."""
    c = text[i]
    if c == "`":
        return None, _backticks(text, i)
    if c == "\\":
        bracket = text[i + 1 : i + 2]
        if bracket in ("(", "["):
            closer = "\\)" if bracket == "(" else "\\]"
            at = _closing(text, i + 2, closer)
            if at >= 0 and text[i + 2 : at].strip():
                return _span(text, i, at + 2, (i + 2, at), bracket == "["), at + 2
        return None, i + 2
    if text.startswith("$$", i):
        at = _closing(text, i + 2, "$$")
        if at >= 0 and text[i + 2 : at].strip():
            return _span(text, i, at + 2, (i + 2, at), True), at + 2
        return None, i + 2
    at = _inline_end(text, i)
    if at >= 0:
        return _span(text, i, at + 1, (i + 1, at), False), at + 1
    return None, i + 1


def _past_fence(text: str, line_start: int) -> int:
    """If the line at `line_start` opens a fence: the end of the fenced block; else -1."""
    end = text.find("\n", line_start)
    fence = opens_fence(text[line_start : len(text) if end < 0 else end])
    if fence is None:
        return -1
    while end >= 0:
        start = end + 1
        end = text.find("\n", start)
        if closes_fence(text[start : len(text) if end < 0 else end], fence):
            return len(text) if end < 0 else end
    return len(text)


def find_math(text: str) -> list[MathSpan]:
    """Every formula in `text`, in order (see the module's guarantees)."""
    spans: list[MathSpan] = []
    i = 0
    line_start = True
    while i < len(text):
        if line_start:
            past = _past_fence(text, i)
            if past >= 0:
                i, line_start = past, False
                continue
        m = _NEXT.search(text, i)
        if m is None:
            break
        if m.group() == "\n":
            i, line_start = m.end(), True
            continue
        span, i = _at(text, m.start())
        line_start = False
        if span is not None:
            spans.append(span)
    return spans


def replace_spans(text: str, spans: list[MathSpan], make: Callable[[MathSpan], str]) -> str:
    """`text` with each of `spans` (in order, not overlapping) replaced by `make(span)`."""
    out: list[str] = []
    pos = 0
    for span in spans:
        out.append(text[pos : span.start])
        out.append(make(span))
        pos = span.end
    out.append(text[pos:])
    return "".join(out)


__all__ = ["MathSpan", "find_math", "replace_spans"]
