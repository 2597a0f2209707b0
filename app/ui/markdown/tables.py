"""Tables in the answer view, drawn in the theme's colours, and the header lines ("label ·
Copy") the view puts above tables and code blocks.

Guarantees: `style_table` gives a table collapsed 1-pixel borders in the theme's border colour,
padded cells, and a header row on the theme's code background in bold, and returns the table as
tab-separated values (what its Copy link copies: one row per line, cells separated by tabs,
formulas as their LaTeX source); `table_header_at` opens an empty line right above a table for
its header, reusing an empty plain line there only if it belongs to what is being dressed;
`drop_empty_first_lines` removes the empty line Qt's importer sometimes opens a cell with.
A header line is a block of its own marked `HEADER` (copying skips it), reading "label · Copy"
in the theme's muted colour at a smaller size, "Copy" a link to the given address; it sits
right above its table or code block (at its indent, on the code background), and a code
block's first line keeps its own format and text.
"""

from __future__ import annotations

from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFrameFormat,
    QTextTable,
)

from app.ui.markdown.copying import HEADER, table_tsv
from app.ui.theme import Theme

CELL_PADDING = 6.0


def drop_empty_first_lines(doc: QTextDocument, table: QTextTable) -> None:
    """Qt's importer opens a table that follows a quote with an empty line in its first cell."""
    for row in range(table.rows()):
        for column in range(table.columns()):
            cell = table.cellAt(row, column)
            first = doc.findBlock(cell.firstPosition())
            if first.length() == 1 and first.next().position() <= cell.lastPosition():
                cursor = QTextCursor(first)
                cursor.setBlockFormat(first.next().blockFormat())
                cursor.deleteChar()


def style_table(doc: QTextDocument, table: QTextTable, theme: Theme) -> str:
    """Draw `table` in `theme`'s colours; its text as tab-separated values."""
    fmt = table.format()
    fmt.setBorder(1.0)
    fmt.setBorderBrush(QBrush(QColor(theme.border)))
    fmt.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
    fmt.setBorderCollapse(True)
    fmt.setCellPadding(CELL_PADDING)
    fmt.setCellSpacing(0.0)
    fmt.setTopMargin(2.0)
    fmt.setBottomMargin(8.0)
    table.setFormat(fmt)
    bold = QTextCharFormat()
    bold.setFontWeight(QFont.Weight.Bold)
    for column in range(table.columns()):
        cell = table.cellAt(0, column)
        shaded = cell.format().toTableCellFormat()
        shaded.setBackground(QColor(theme.code))
        cell.setFormat(shaded)
        cursor = cell.firstCursorPosition()
        cursor.setPosition(cell.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(bold)
    return table_tsv(doc, table)


def table_header_at(doc: QTextDocument, at: int, first: int) -> QTextCursor:
    """A cursor in an empty line just above the table whose frame starts at `at`: the empty
    plain line already there when it is at or after `first` (what is being dressed), else a
    new one."""
    cursor = QTextCursor(doc)
    cursor.setPosition(at)
    above = cursor.block()
    plain = (
        above.length() == 1
        and above.textList() is None
        and not above.blockFormat().hasProperty(QTextFormat.Property.BlockCodeLanguage)
        and cursor.currentTable() is None
    )
    if not (plain and above.position() >= first):
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    return cursor


def _write(
    cursor: QTextCursor, fmt: QTextBlockFormat, label: str, href: str, theme: Theme, font: QFont
) -> None:
    fmt.setProperty(HEADER, True)
    fmt.setTopMargin(6.0)
    cursor.setBlockFormat(fmt)
    plain = QTextCharFormat()
    plain.setForeground(QColor(theme.muted))
    plain.setFontPointSize(max(6.0, font.pointSizeF() * 0.85))
    link = QTextCharFormat(plain)
    link.setForeground(QColor(theme.accent))
    link.setAnchor(True)
    link.setAnchorHref(href)
    cursor.insertText(f"{label} · ", plain)
    cursor.insertText("Copy", link)


def code_header(
    doc: QTextDocument, start: int, label: str, href: str, theme: Theme, font: QFont
) -> None:
    """A header line above the code block whose first line starts at `start`."""
    cursor = QTextCursor(doc)
    cursor.setPosition(start)
    code = cursor.blockFormat()
    if start == 0:  # split the first line off: the header takes its place
        cursor.insertBlock(code, cursor.blockCharFormat())
        cursor.setPosition(0)
    else:
        cursor.setPosition(start - 1)
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    fmt = QTextBlockFormat()
    fmt.setIndent(code.indent())
    fmt.setLeftMargin(code.leftMargin())
    fmt.setBackground(QColor(theme.code))
    _write(cursor, fmt, label, href, theme, font)


def table_header(
    doc: QTextDocument, at: int, first: int, href: str, theme: Theme, font: QFont
) -> None:
    """A header line above the table whose frame starts at `at` (see `table_header_at`)."""
    cursor = table_header_at(doc, at, first)
    fmt = QTextBlockFormat()
    fmt.setIndent(cursor.blockFormat().indent())
    _write(cursor, fmt, "table", href, theme, font)


__all__ = [
    "CELL_PADDING",
    "code_header",
    "drop_empty_first_lines",
    "style_table",
    "table_header",
    "table_header_at",
]
