"""What copying from an answer view gives: plain text, with each formula as its LaTeX source.

Guarantees: `plain_text` of a document range gives the text a reader sees there, except that
a formula (an image carrying `MATH_SOURCE`) gives its source with its delimiters, exactly as
the answer wrote it; line breaks inside a paragraph and paragraph ends both give "\\n"; a table
gives one line per row with its cells separated by tabs; the header lines the view adds above
code blocks and tables (blocks marked `HEADER`) give nothing. `table_tsv` gives a whole table
as tab-separated values, one row per line (a cell's own line breaks and tabs become spaces).
"""

from __future__ import annotations

import atexit

import shiboken6
from PySide6.QtCore import QMimeData
from PySide6.QtGui import QTextBlock, QTextCursor, QTextDocument, QTextFormat, QTextTable

MATH_SOURCE = QTextFormat.Property.UserProperty.value + 1  # char: a formula's source
HEADER = QTextFormat.Property.UserProperty.value + 2  # block: a header line the view added
_PLAIN = str.maketrans({"\u2028": "\n", "\u2029": "\n", "\u00a0": " "})


def _fragments(block: QTextBlock, start: int, end: int) -> str:
    out: list[str] = []
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        lo = max(start, fragment.position())
        hi = min(end, fragment.position() + fragment.length())
        if lo < hi:
            fmt = fragment.charFormat()
            source = fmt.property(MATH_SOURCE) if fmt.isImageFormat() else None
            if isinstance(source, str):
                out.append(source)
            else:
                units = fragment.text().encode("utf-16-le", "surrogatepass")
                a, b = 2 * (lo - fragment.position()), 2 * (hi - fragment.position())
                text = units[a:b].decode("utf-16-le", "surrogatepass")  # Qt counts UTF-16
                out.append(text.replace("\ufffc", "").translate(_PLAIN))
        it += 1
    return "".join(out)


def _cell(block: QTextBlock) -> tuple[int, int, int] | None:
    """(table, row, column) of a block inside a table cell."""
    table = QTextCursor(block).currentTable()
    if table is None:
        return None
    cell = table.cellAt(block.position())
    return table.objectIndex(), cell.row(), cell.column()


def plain_text(doc: QTextDocument, start: int, end: int) -> str:
    """The text of positions `start`..`end` as copying gives it."""
    out: list[str] = []
    block = doc.findBlock(start)
    previous: tuple[int, int, int] | None = None
    first = True
    while block.isValid() and block.position() <= end:
        if block.blockFormat().boolProperty(HEADER):
            block = block.next()
            continue
        cell = _cell(block)
        if not first:
            same_row = bool(cell and previous and cell[:2] == previous[:2] and cell != previous)
            out.append("\t" if same_row else "\n")
        out.append(_fragments(block, start, end))
        previous, first = cell, False
        block = block.next()
    return "".join(out)


def table_tsv(doc: QTextDocument, table: QTextTable) -> str:
    """`table` as tab-separated values, one row per line."""
    rows: list[str] = []
    for row in range(table.rows()):
        cells = []
        for column in range(table.columns()):
            cell = table.cellAt(row, column)
            text = plain_text(doc, cell.firstPosition(), cell.lastPosition())
            cells.append(" ".join(text.replace("\t", " ").split("\n")).strip())
        rows.append("\t".join(cells))
    return "\n".join(rows)


__all__ = ["HEADER", "MATH_SOURCE", "plain_text", "table_tsv"]


_made: list[QMimeData] = []  # the copies made here that the clipboard may still hold


def made(data: QMimeData) -> QMimeData:
    """`data`, a copy made in Python for the clipboard, remembered for `hand_over_clipboard`."""
    _made[:] = [*[d for d in _made if shiboken6.isValid(d)][-3:], data]
    return data


def hand_over_clipboard() -> None:
    """At exit, while Python still runs: a copy made here that the clipboard holds is put there
    again as plain text made by Qt itself. Qt destroys the clipboard after Python has finished,
    and destroying a `QMimeData` made in Python then crashes the process; the user's copied
    text stays on the clipboard for the desktop to keep."""
    from PySide6.QtGui import QClipboard, QGuiApplication

    app = QGuiApplication.instance()
    if not isinstance(app, QGuiApplication):
        return
    clipboard = app.clipboard()
    ours = [d for d in _made if shiboken6.isValid(d)]
    for mode in (QClipboard.Mode.Clipboard, QClipboard.Mode.Selection):
        held = clipboard.mimeData(mode)
        if held is not None and any(held is d for d in ours):
            clipboard.setText(held.text(), mode)
    _made.clear()


atexit.register(hand_over_clipboard)
