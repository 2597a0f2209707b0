"""Code colouring with Pygments, as character formats in a `QTextDocument`.

Guarantees: a code block is lexed whole, so its first line is coloured like every other; the
lexer is the one Pygments registers for the fence's language, looked up by alias ("py",
"rust", "c++", "sh") or, failing that, by file name ("main.rs"); an unknown or empty language
is plain text (nothing is guessed); each token takes its kind's colour, weight and slant from
the named Pygments style, a kind the style leaves unset taking its parent kind's (Pygments'
own inheritance); `highlight` changes only formats, never text, so positions stay valid.
A block still streaming in can be coloured cheaply (`streaming_spans`: an append lexes a few
lines, not the whole block). Lexers and formats are cached; Pygments is imported on first use.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor, QTextDocument

from app.ui.markdown.source import utf16

Span = tuple[int, int, QTextCharFormat]  # start, end (in the code's text), format
PIECE_LINES = 24  # lines lexed together while a block streams in


@lru_cache(maxsize=128)
def lexer_for(language: str) -> Any:
    """The Pygments lexer for a fence's language (None: plain text)."""
    from pygments.lexers import (  # type: ignore[import-untyped]
        get_lexer_by_name,
        get_lexer_for_filename,
    )
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    name = language.strip().lower()
    if not name:
        return None
    for find in (get_lexer_by_name, get_lexer_for_filename):
        try:
            return find(name, stripnl=False, ensurenl=False)
        except ClassNotFound:
            continue
    return None


@lru_cache(maxsize=4096)
def token_format(style_name: str, token: Any) -> QTextCharFormat | None:
    """How `style_name` draws tokens of kind `token` (None: as plain text)."""
    from pygments.styles import get_style_by_name  # type: ignore[import-untyped]

    look = get_style_by_name(style_name).style_for_token(token)
    if not (look["color"] or look["bold"] or look["italic"]):
        return None
    fmt = QTextCharFormat()
    if look["color"]:
        fmt.setForeground(QColor("#" + look["color"]))
    if look["bold"]:
        fmt.setFontWeight(QFont.Weight.Bold)
    if look["italic"]:
        fmt.setFontItalic(True)
    return fmt


@lru_cache(maxsize=512)
def spans(code: str, language: str, style_name: str) -> tuple[Span, ...]:
    """The coloured runs of `code`, lexed whole (adjacent tokens of one look joined); cached,
    so a theme switched back or a conversation opened again is not lexed again."""
    lexer = lexer_for(language)
    if lexer is None:
        return ()
    out: list[Span] = []
    for index, token, value in lexer.get_tokens_unprocessed(code):
        fmt = token_format(style_name, token)
        end = index + len(value)
        if fmt is None or not value:
            continue
        if out and out[-1][1] == index and out[-1][2] is fmt:
            out[-1] = (out[-1][0], end, fmt)
        else:
            out.append((index, end, fmt))
    return tuple(out)


def warm_up() -> None:
    """Load Pygments (its lexer table, a lexer, the theme styles) and the math renderer ahead
    of the first code block and formula, so the first answer with them does not pay for it
    while it streams; on a background thread (pure Python imports and parsing, no Qt object is
    made there), started once the window is idle after it starts."""
    threading.Thread(target=_load, name="warm-up", daemon=True).start()


def _load() -> None:
    try:
        from pygments.styles import get_style_by_name

        from app.ui.markdown.math_render import warm_up as warm_math

        lexer_for("python")
        for style in ("default", "github-dark"):
            get_style_by_name(style)
        warm_math()
    except Exception:  # only a warm-up: what failed here is loaded again at its first use
        logging.getLogger("ui").debug("warm-up did not finish", exc_info=True)


def streaming_spans(code: str, language: str, style_name: str) -> tuple[Span, ...]:
    """Cheap colours for code still streaming in: its finished lines (not the last one), lexed
    `PIECE_LINES` at a time, each piece cached, so an append lexes at most one new piece. A
    string or comment running across pieces may be coloured wrongly until the block is lexed
    whole with `spans`."""
    lines = code.split("\n")[:-1]
    out: list[Span] = []
    offset = 0
    for i in range(0, len(lines), PIECE_LINES):
        piece = "\n".join(lines[i : i + PIECE_LINES]) + "\n"
        out.extend((offset + a, offset + b, f) for a, b, f in spans(piece, language, style_name))
        offset += len(piece)
    return tuple(out)


def highlight(
    doc: QTextDocument, start: int, code: str, language: str, style_name: str, *, whole: bool
) -> None:
    """Colour `code`, which the document holds from position `start` (its lines as blocks):
    lexed whole, or (`whole` false) as `streaming_spans` does."""
    runs = (spans if whole else streaming_spans)(code, language, style_name)
    at = utf16(code)
    cursor = QTextCursor(doc)
    for begin, end, fmt in runs:
        cursor.setPosition(start + at(begin))
        cursor.setPosition(start + at(end), QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(fmt)


__all__ = ["PIECE_LINES", "highlight", "lexer_for", "spans", "streaming_spans", "token_format"]
