"""Markdown into the answer view's document, and the pass that dresses what Qt's importer made.

Guarantees: `insert_markdown` appends Markdown after everything in the document as blocks that
keep their own formats (Qt's fragment insertion would give the first one the format of the
block it lands in: a quote, a list or a code line would lose what it is). `dress` touches only
what was appended from `start` on and leaves the text a reader sees as the source meant it:
  - a soft break after a `BREAK` becomes a line break inside the paragraph; other `BREAK`s go;
    `TAB` inside code becomes a tab again;
  - a formula's placeholder image gets its drawing's size and alignment at the view's font,
    its LaTeX source (`MATH_SOURCE`, and as tooltip); display math stands alone on a centred
    line, the text before and after it on lines of their own (out of a list, at the item's
    indent, so no new bullet appears; inside a table's cell it stays where it is); a
    placeholder Markdown left as text (inside code) shows the formula's source;
  - code blocks lie on the theme's code background, coloured by its Pygments style as asked
    (`Look.colouring`), under a header line "language · Copy" linking to `copy:N`, and tables
    get theirs, "table · Copy" linking to `table:N` (`tables.py`);
  - quotes (indented per level, muted), links and inline code get the theme's colours; prose
    gets readable line spacing.
It returns the code blocks' text (tabs and all, one trailing newline) and the tables' text,
in document order; header links count from the indices it is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextImageFormat,
    QTextTable,
)

from app.ui.markdown.code_highlight import highlight
from app.ui.markdown.copying import MATH_SOURCE
from app.ui.markdown.source import BREAK, TAB, utf16
from app.ui.markdown.tables import code_header, drop_empty_first_lines, style_table, table_header
from app.ui.theme import Theme

LINE_HEIGHT = 135.0  # percent
PROPORTIONAL = QTextBlockFormat.LineHeightTypes.ProportionalHeight.value
QUOTE_INDENT = 18.0  # pixels per quote level (the view draws a bar in each)
_DUMMY = "\u200b"  # a paragraph put first so the real first block keeps its format
_PLACEHOLDER = re.compile(r"!\[formula\]\((math:[0-9a-f]+)\)")
_MATH = "](math:"  # in every placeholder
_SPACE = (" ", "\u2028")  # what may stand between display math and the text around it
_LANGUAGE = QTextFormat.Property.BlockCodeLanguage
_QUOTE = QTextFormat.Property.BlockQuoteLevel


@dataclass(frozen=True)
class Placed:
    """A formula whose placeholder image is named in the Markdown handed to Qt."""

    source: str  # as the answer wrote it, delimiters included
    display: bool
    width: float
    height: float
    middle: bool  # aligned AlignMiddle, else AlignBaseline (see `math_render`)


Colouring = Literal["whole", "streaming", "off"]  # code: lexed whole, cheaply, or not at all


@dataclass(frozen=True)
class Look:
    theme: Theme
    font: QFont
    formulas: Mapping[str, Placed]
    colouring: Colouring


@dataclass
class Dressed:
    code_blocks: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)


@dataclass
class _Code:
    start: int  # the first line's position
    language: str
    lines: list[str]
    end: int = 0  # past the last line's end


def placeholder(name: str) -> str:
    """The Markdown image that stands for formula `name` until `dress` dresses it."""
    return f"![formula]({name})"


def insert_markdown(doc: QTextDocument, markdown: str) -> int:
    """Append `markdown` at the document's end; where it begins."""
    cursor = QTextCursor(doc)
    cursor.movePosition(QTextCursor.MoveOperation.End)
    start = cursor.position()
    if start == 0:  # Qt gives the first block its format only at position 0 of a plain block
        listed = cursor.block().textList()
        if listed is not None:
            listed.remove(cursor.block())
        cursor.setBlockFormat(QTextBlockFormat())
        cursor.setBlockCharFormat(QTextCharFormat())
        cursor.setCharFormat(QTextCharFormat())
        cursor.insertMarkdown(markdown)
        return 0
    cursor.insertMarkdown(_DUMMY + "\n\n" + markdown)  # the dummy joins the last block
    cursor.setPosition(start)
    cursor.setPosition(start + 1, QTextCursor.MoveMode.KeepAnchor)
    if cursor.selectedText() == _DUMMY:
        cursor.removeSelectedText()
    return start


def _unlist(block: QTextBlock) -> None:
    """Take a block split off a list item out of the list, at the item's indent."""
    listed = block.textList()
    if listed is None:
        return
    indent = listed.format().indent()
    listed.remove(block)
    fmt = block.blockFormat()
    fmt.setIndent(indent)
    QTextCursor(block).setBlockFormat(fmt)


def _own_line(doc: QTextDocument, at: int) -> None:
    """The display formula at `at` alone on a centred line (see the module's guarantees)."""
    if QTextCursor(doc.findBlock(at)).currentTable() is not None:
        return
    cursor = QTextCursor(doc)
    cursor.setPosition(at + 1)
    while not cursor.atBlockEnd() and doc.characterAt(cursor.position()) in _SPACE:
        cursor.deleteChar()
    if not cursor.atBlockEnd():
        cursor.insertBlock(cursor.blockFormat(), QTextCharFormat())
        _unlist(cursor.block())
    cursor.setPosition(at)
    while not cursor.atBlockStart() and doc.characterAt(cursor.position() - 1) in _SPACE:
        cursor.deletePreviousChar()
    if not cursor.atBlockStart():
        cursor.insertBlock(cursor.blockFormat(), QTextCharFormat())
        _unlist(cursor.block())
    fmt = cursor.blockFormat()
    fmt.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    fmt.setLineHeight(100.0, PROPORTIONAL)  # the formula's own height, no more
    fmt.setTopMargin(max(fmt.topMargin(), 6.0))
    fmt.setBottomMargin(max(fmt.bottomMargin(), 6.0))
    cursor.setBlockFormat(fmt)


class _Dresser:
    def __init__(self, doc: QTextDocument, look: Look, code_base: int, table_base: int) -> None:
        self.doc, self.look = doc, look
        self.cursor = QTextCursor(doc)
        self.code_base, self.table_base = code_base, table_base
        self.codes: list[_Code] = []
        self.tables: dict[int, QTextTable] = {}
        self.displays: list[int] = []
        self.first = 0

    def run(self, start: int) -> Dressed:
        block = self.doc.begin() if start == 0 else self.doc.findBlock(start).next()
        self.first = block.position() if block.isValid() else start
        while block.isValid():
            fmt = block.blockFormat()
            if fmt.hasProperty(_LANGUAGE):  # code: never in a table
                self._code_line(block, fmt.stringProperty(_LANGUAGE))
                block = block.next()
                continue
            table = QTextCursor(block).currentTable()
            if table is not None and table.objectIndex() not in self.tables:
                self.tables[table.objectIndex()] = table
                at = block.position()
                drop_empty_first_lines(self.doc, table)  # before any position is noted
                block = self.doc.findBlock(at)
            self._prose(block, table is not None)
            block = block.next()
        dressed = Dressed()
        for code in self.codes:
            dressed.code_blocks.append(self._paint_code(code))
        tables = list(self.tables.values())
        dressed.tables = [style_table(self.doc, t, self.look.theme) for t in tables]
        self._restructure(tables)
        return dressed

    # --- phase 1: each block once ---------------------------------------------------------

    def _code_line(self, block: QTextBlock, language: str) -> None:
        text = block.text()
        if BREAK in text or _MATH in text:  # an indented code block's lines were marked as text
            self._breaks(block)
            self._placeholders(block)
            text = block.text()
        if TAB in text:
            cursor = QTextCursor(block)
            cursor.movePosition(
                QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor
            )
            text = text.replace(TAB, "\t")
            cursor.insertText(text)
        position = block.position()
        last = self.codes[-1] if self.codes else None
        if last and last.language == language and last.end == position:
            last.lines.append(text)
        else:
            self.codes.append(_Code(position, language, [text]))
        self.codes[-1].end = position + block.length()

    def _prose(self, block: QTextBlock, in_table: bool) -> None:
        self._breaks(block)
        self._placeholders(block)
        quote = block.blockFormat().intProperty(_QUOTE)
        self._characters(block, quote)
        fmt = block.blockFormat()
        if not in_table:
            fmt.setLineHeight(LINE_HEIGHT, PROPORTIONAL)
            fmt.setBottomMargin(max(fmt.bottomMargin(), 4.0))
        if quote:
            fmt.setLeftMargin(QUOTE_INDENT * quote)
            fmt.setRightMargin(0.0)
        QTextCursor(block).setBlockFormat(fmt)

    def _select(self, start: int, end: int) -> QTextCursor:
        self.cursor.setPosition(start)
        self.cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        return self.cursor

    def _breaks(self, block: QTextBlock) -> None:
        text, base = block.text(), block.position()
        if BREAK not in text:
            return
        at = utf16(text)
        for i in reversed([i for i, c in enumerate(text) if c == BREAK]):
            soft = text[i + 1 : i + 2] == " "
            cursor = self._select(base + at(i), base + at(i) + (2 if soft else 1))
            cursor.insertText("\u2028") if soft else cursor.removeSelectedText()

    def _placeholders(self, block: QTextBlock) -> None:
        text, base = block.text(), block.position()
        if _MATH not in text:
            return
        at = utf16(text)
        for m in reversed(list(_PLACEHOLDER.finditer(text))):
            placed = self.look.formulas.get(m[1])
            if placed is not None:
                self._select(base + at(m.start()), base + at(m.end())).insertText(placed.source)

    def _characters(self, block: QTextBlock, quote: int) -> None:
        runs = []
        it = block.begin()
        while not it.atEnd():
            runs.append(
                (it.fragment().position(), it.fragment().length(), it.fragment().charFormat())
            )
            it += 1
        theme = self.look.theme
        for position, length, fmt in runs:
            if fmt.isImageFormat():
                self._formula(position, fmt.toImageFormat())
                continue
            change = QTextCharFormat()
            if fmt.isAnchor():
                change.setForeground(QColor(theme.accent))
            elif quote:
                change.setForeground(QColor(theme.muted))
            if fmt.fontFixedPitch():
                change.setBackground(QColor(theme.code))
            if change.properties():
                self._select(position, position + length).mergeCharFormat(change)

    def _formula(self, position: int, fmt: QTextImageFormat) -> None:
        placed = self.look.formulas.get(fmt.name())
        if placed is None:
            return
        fmt.setWidth(placed.width)
        fmt.setHeight(placed.height)
        align = QTextCharFormat.VerticalAlignment
        fmt.setVerticalAlignment(align.AlignMiddle if placed.middle else align.AlignBaseline)
        fmt.setFont(self.look.font)
        fmt.setProperty(MATH_SOURCE, placed.source)
        fmt.setToolTip(placed.source)
        self._select(position, position + 1).setCharFormat(fmt)
        if placed.display:
            self.displays.append(position)

    # --- phase 2: code ----------------------------------------------------------------------

    def _paint_code(self, code: _Code) -> str:
        shade = QTextBlockFormat()
        shade.setBackground(QColor(self.look.theme.code))
        self._select(code.start, code.end - 1).mergeBlockFormat(shade)
        text = "\n".join(code.lines)
        if self.look.colouring != "off":
            style, whole = self.look.theme.code_style, self.look.colouring == "whole"
            highlight(self.doc, code.start, text, code.language, style, whole=whole)
        return text + "\n"

    # --- phase 3: new lines, last to first so that earlier positions hold -----------------

    def _restructure(self, tables: list[QTextTable]) -> None:
        doc, theme, font = self.doc, self.look.theme, self.look.font
        edits: list[tuple[int, Callable[[], None]]] = []
        for i, code in enumerate(self.codes):
            href = f"copy:{self.code_base + i}"
            label = code.language or "code"
            edits.append(
                (code.start, partial(code_header, doc, code.start, label, href, theme, font))
            )
        for i, table in enumerate(tables):
            at, href = table.firstPosition() - 1, f"table:{self.table_base + i}"
            edits.append((at, partial(table_header, doc, at, self.first, href, theme, font)))
        edits += [(at, partial(_own_line, doc, at)) for at in self.displays]
        for _at, edit in sorted(edits, key=lambda e: e[0], reverse=True):
            edit()


def dress(doc: QTextDocument, start: int, look: Look, code_base: int, table_base: int) -> Dressed:
    """Dress what was appended from `start` on (see the module's guarantees)."""
    return _Dresser(doc, look, code_base, table_base).run(start)


__all__ = [
    "LINE_HEIGHT",
    "QUOTE_INDENT",
    "Colouring",
    "Dressed",
    "Look",
    "Placed",
    "dress",
    "insert_markdown",
    "placeholder",
]
