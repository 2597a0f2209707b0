"""A Markdown view that grows while an answer streams, laying out only its tail.

Guarantees: text appended to the view is split at the last finished block (a blank line
outside a code fence, or a closing fence); everything before it is rendered once and never
touched again, and only the unfinished tail is replaced on each append, so the cost of an
append does not grow with the length of the answer. The tail is rendered exactly as it will
be once finished (Markdown, math, code and all), so nothing reflows when the stream ends:
`finish` changes no layout, and single newlines are line breaks throughout. Code blocks are
coloured by Pygments in the theme's style (`code_highlight`), with a header line naming the
language and a "Copy" link that copies exactly that block; formulas (`$…$`, `$$…$$`, `\\(…\\)`,
`\\[…\\]`, found by `math_spans`) are drawn by `math_render` in the text's size and colour, and
one that cannot be drawn shows its source as code; copying a selection gives formulas as their
LaTeX source (`copying.py`); quotes carry a bar per level, tables borders, a shaded header
row and a "Copy" link (tab-separated values). Finished or not, the view shows no caret but
stays selectable by mouse and keyboard. A theme switch (`appearance.apply` calls
`theme_changed`) or a font change renders the whole answer again in the new look at once.
Prose lines hold at most `MEASURE` characters; the view sizes itself to its content (the
transcript scrolls, not the view). Pygments and ziamath load on first use, not on import.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QMimeData, QPointF, QRectF, QSize, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QFontMetricsF,
    QGuiApplication,
    QImage,
    QPainter,
    QPaintEvent,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QSizePolicy, QTextBrowser, QWidget

from app.ui.markdown import math_render
from app.ui.markdown.blocks import (
    QUOTE_INDENT,
    Colouring,
    Dressed,
    Look,
    Placed,
    dress,
    insert_markdown,
    placeholder,
)
from app.ui.markdown.copying import made, plain_text
from app.ui.markdown.math_spans import MathSpan, find_math, replace_spans
from app.ui.markdown.source import code_span, finished_end, mark_lines
from app.ui.theme import current

MEASURE = 110  # characters a prose line may hold at most
TAIL_HIGHLIGHT = 20_000  # characters: a longer unfinished tail is coloured once finished
QUOTE_BAR = 3.0  # pixels wide, in the theme's muted colour at this opacity
QUOTE_BAR_OPACITY = 0.45


class MarkdownView(QTextBrowser):
    """A read-only, self-sizing Markdown view for one answer or preamble."""

    def __init__(self, parent: QWidget | None = None, *, accessible_name: str = "Answer") -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFrameShape(QTextBrowser.Shape.NoFrame)
        self.setAccessibleName(accessible_name)
        self.setMaximumWidth(self.fontMetrics().averageCharWidth() * MEASURE)  # readable lines
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setCursorWidth(0)  # read-only text: selectable, but no blinking caret
        self.document().setUndoRedoEnabled(False)
        self._source = ""
        self._committed = 0  # characters of `_source` rendered for good
        self._tail_start = 0  # document position where the tail begins
        self._finished = False
        self._code: list[str] = []  # committed code blocks, then the tail's
        self._tables: list[str] = []
        self._tail_code: list[str] = []
        self._tail_tables: list[str] = []
        self._formulas: dict[str, Placed] = {}
        self._images: dict[str, QImage] = {}
        self.anchorClicked.connect(self._anchor)
        self.document().documentLayout().documentSizeChanged.connect(self._fit)

    @property
    def source_text(self) -> str:
        return self._source

    def set_text(self, text: str) -> None:
        self.clear()
        self._source, self._committed, self._tail_start, self._finished = "", 0, 0, False
        self._code, self._tables, self._tail_code, self._tail_tables = [], [], [], []
        self.append_text(text)

    def append_text(self, text: str) -> None:
        """Add streamed text; only the unfinished tail is laid out again."""
        if not text:
            return
        self._source += text
        pending = self._source[self._committed :]
        cut = finished_end(pending)
        self._drop_tail()
        if cut:
            if pending[:cut].strip():
                done = self._render(pending[:cut], "whole")
                self._code += done.code_blocks
                self._tables += done.tables
            self._committed += cut
            self._tail_start = self.document().characterCount() - 1
        short = len(self._source) - self._committed <= TAIL_HIGHLIGHT
        self._render_tail("streaming" if short else "off")

    def finish(self) -> None:
        """The answer is complete. Its tail already shows as it will stay, so no line moves;
        code in it, coloured cheaply (or not at all) while it streamed, is coloured whole."""
        if self._tail_code:
            self._drop_tail()
            self._render_tail("whole")
        self._code += self._tail_code
        self._tables += self._tail_tables
        self._tail_code, self._tail_tables = [], []
        self._committed = len(self._source)
        self._tail_start = self.document().characterCount() - 1
        self._finished = True

    def _drop_tail(self) -> None:
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._tail_code, self._tail_tables = [], []

    def _render_tail(self, colouring: Colouring) -> None:
        tail = self._source[self._committed :]
        if tail.strip():
            rendered = self._render(tail, colouring)
            self._tail_code, self._tail_tables = rendered.code_blocks, rendered.tables

    def code_blocks(self) -> list[str]:
        return self._code + self._tail_code

    def tables(self) -> list[str]:
        """Each table's text as tab-separated values (what its Copy link copies)."""
        return self._tables + self._tail_tables

    # --- rendering ---------------------------------------------------------------------------

    def _render(self, markdown: str, colouring: Colouring) -> Dressed:
        """Append `markdown` rendered. Qt places new tables only when an edit ends, so the
        insertion is one edit and the dressing, which needs them placed, another."""
        protected = replace_spans(markdown, find_math(markdown), self._placeholder)
        start = insert_markdown(self.document(), mark_lines(protected))
        look = Look(current(), self.document().defaultFont(), self._formulas, colouring)
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()  # one layout pass for the whole dressing
        dressed = dress(self.document(), start, look, len(self._code), len(self._tables))
        cursor.endEditBlock()
        return dressed

    def _math_key(self, span: MathSpan) -> tuple[str, bool, str, float, float, float]:
        font = self.document().defaultFont()
        x_height = float(QFontMetrics(font).xHeight())  # as Qt centres a middle-aligned image
        descent = QFontMetricsF(font).descent()  # as Qt sets a baseline-aligned one
        return span.latex, span.display, current().text, x_height, descent, self.devicePixelRatioF()

    def _placeholder(self, span: MathSpan) -> str:
        """The Markdown that stands for a formula: its image, or its source as code."""
        key = self._math_key(span)
        formula = math_render.render(*key)
        if formula is None:
            return code_span(span.source)
        name = math_render.resource_name(*key)
        if name not in self._images:
            self._images[name] = formula.image
            self.document().addResource(
                QTextDocument.ResourceType.ImageResource, QUrl(name), formula.image
            )
        self._formulas[name] = Placed(
            span.source, span.display, formula.width, formula.height, formula.middle
        )
        return placeholder(name)

    def loadResource(self, kind: int, name: QUrl | str) -> Any:
        """Formulas' images (kept here too: clearing the document drops its resources)."""
        image = self._images.get(name.toString() if isinstance(name, QUrl) else name)
        return image if image is not None else super().loadResource(kind, name)

    def clear(self) -> None:
        super().clear()
        self._images.clear()

    # --- the look ----------------------------------------------------------------------------

    def theme_changed(self) -> None:
        """Render everything again in the theme now in force (code, formulas, tables)."""
        self._render_again()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and self._source:
            self._render_again()

    def _render_again(self) -> None:
        finished = self._finished
        self.set_text(self._source)
        if finished:
            self.finish()

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        painter = QPainter(self.viewport())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(current().muted))
        painter.setOpacity(QUOTE_BAR_OPACITY)
        offset = QPointF(-self.horizontalScrollBar().value(), -self.verticalScrollBar().value())
        for rect in self._quote_bars(QRectF(event.rect()).translated(-offset)):
            painter.drawRect(rect.translated(offset))
        painter.end()

    def _quote_bars(self, area: QRectF) -> list[QRectF]:
        """The quote bars (document coordinates) of the blocks that cross `area`."""
        layout = self.document().documentLayout()
        position = layout.hitTest(area.topLeft(), Qt.HitTestAccuracy.FuzzyHit)
        block = self.document().findBlock(max(position, 0))
        bars: list[QRectF] = []
        while block.isValid():
            box = layout.blockBoundingRect(block)
            if box.top() > area.bottom():
                break
            fmt = block.blockFormat()
            level = fmt.intProperty(QTextFormat.Property.BlockQuoteLevel)
            left = box.left() + fmt.leftMargin() - QUOTE_INDENT * level
            for i in range(level):
                x = left + QUOTE_INDENT * i + 2
                bars.append(QRectF(x, box.top(), QUOTE_BAR, box.height()))
            block = block.next()
        return bars

    # --- copying -----------------------------------------------------------------------------

    def createMimeDataFromSelection(self) -> QMimeData:
        """Plain text, formulas as their LaTeX source (see `copying.py`)."""
        cursor = self.textCursor()
        data = QMimeData()
        data.setText(plain_text(self.document(), cursor.selectionStart(), cursor.selectionEnd()))
        return made(data)  # handed back to Qt's own at exit (`copying.py`)

    def _anchor(self, url: QUrl) -> None:
        kind, _, index = url.toString().partition(":")
        copies = {"copy": self.code_blocks(), "table": self.tables()}.get(kind)
        if copies is not None and index.isdigit() and int(index) < len(copies):
            QGuiApplication.clipboard().setText(copies[int(index)])

    def _fit(self) -> None:
        height = int(self.document().size().height()) + 6
        if height != self.height():
            self.setFixedHeight(height)

    def sizeHint(self) -> QSize:
        return QSize(400, int(self.document().size().height()) + 6)


def monospace() -> QFont:
    font = QFont("monospace")
    font.setStyleHint(QFont.StyleHint.TypeWriter)
    return font


__all__ = ["MEASURE", "MarkdownView", "monospace"]
