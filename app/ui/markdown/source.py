"""Markdown source as the answer view prepares it for Qt's parser; pure Python, no Qt.

Guarantees: `finished_end` cuts a streamed source only after a blank line outside a code fence
or after the line that closes a fence, never inside a fence; `mark_lines` changes nothing a
reader sees: it only adds a `BREAK` at the end of each line that may go on in the same paragraph
(the view turns a soft break after a `BREAK` into a line break and drops every other `BREAK`, so
single newlines stay line breaks and Markdown still decides what is a paragraph), writes tabs
inside fenced code as `TAB` (Qt's parser would expand them; the view turns them back), turns a
hard break's trailing spaces into a `BREAK`, and puts a blank line before a table header that
follows a paragraph line (so the table is a table); text inside fences is otherwise untouched.
`code_span` writes any text as one inline code span; `utf16` maps string indices to Qt's
positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable

BREAK = "\u1680"  # a space character (Zs) to Markdown, so emphasis before it still closes
TAB = "\ue009"  # a private-use character: a tab inside fenced code
_FENCE = re.compile(r"^[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(`{3,}|~{3,})([^\n]*)$")
_CLOSE = re.compile(r"^[ \t>]*(`{3,}|~{3,})[ \t]*$")
_STRUCTURAL = re.compile(  # lines that mean something alone: a mark would change what they are
    r"^[ \t>]*(?:#{1,6}(?:[ \t]|$)|(?:[-*_][ \t]*){3,}$|=+[ \t]*$|-+[ \t]*$"
    r"|(?:[-*+]|\d{1,9}[.)])[ \t]*$|\[[^\]]+\]:|<)"
)
_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


def opens_fence(line: str) -> str | None:
    """The fence (``` or ~~~, any length) that `line` opens, or None."""
    m = _FENCE.match(line)
    if m is None or (m[1][0] == "`" and "`" in m[2]):
        return None
    return m[1]


def closes_fence(line: str, fence: str) -> bool:
    m = _CLOSE.match(line)
    return m is not None and m[1][0] == fence[0] and len(m[1]) >= len(fence)


def finished_end(text: str) -> int:
    """The end of the last finished block in `text` (0: none): a blank line outside a code
    fence, or the line that closes a fence. Cuts are never inside a fence."""
    cut, pos = 0, 0
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        pos += len(line)
        if fence is not None:
            if closes_fence(line.rstrip("\n"), fence):
                fence, cut = None, pos
        elif (opened := opens_fence(line.rstrip("\n"))) is not None:
            fence = opened
        elif not line.strip():
            cut = pos
    return cut


def _table_start(line: str, following: str) -> bool:
    return "|" in line and "|" in following and _DELIMITER.match(following) is not None


def _may_go_on(line: str, following: str) -> bool:
    """Whether the newline after `line` may be a soft break inside a paragraph."""
    if not line.strip() or not following.strip() or "|" in line:
        return False
    return _STRUCTURAL.match(line) is None and not line.endswith("\\")


def mark_lines(text: str) -> str:
    """`text` with its line ends marked (see the module's guarantees)."""
    lines = text.split("\n")
    out: list[str] = []
    fence: str | None = None
    after_text = False
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else None
        if fence is not None:
            fence = None if closes_fence(line, fence) else fence
            out.append(line if fence is None else line.replace("\t", TAB))
            after_text = False
            continue
        if (opened := opens_fence(line)) is not None:
            fence = opened
            out.append(line)
            after_text = False
            continue
        if after_text and following is not None and _table_start(line, following):
            out.append("")
        if following is not None and _may_go_on(line.rstrip(" "), following):
            line = line.rstrip(" ") + BREAK
        out.append(line)
        after_text = bool(line.strip())
    return "\n".join(out)


def code_span(text: str) -> str:
    """`text` as one inline code span (with more backticks than any run inside it)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def utf16(text: str) -> Callable[[int], int]:
    """Index into `text` → Qt's position in it (Qt counts UTF-16 units: an emoji is two)."""
    if max(text, default="a") < "\U00010000":
        return int
    units = [0]
    for c in text:
        units.append(units[-1] + (2 if ord(c) > 0xFFFF else 1))
    return units.__getitem__


__all__ = [
    "BREAK",
    "TAB",
    "closes_fence",
    "code_span",
    "finished_end",
    "mark_lines",
    "opens_fence",
    "utf16",
]
