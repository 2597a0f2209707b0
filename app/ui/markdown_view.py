"""A Markdown view that grows while an answer streams, laying out only its tail.

Guarantees: text appended to the view is split at the last block boundary (a blank line
outside a code fence, or a closing fence); everything before it is inserted once as Markdown
and never touched again, and only the unfinished tail is replaced on each append, so the
cost of an append does not grow with the length of the answer; code blocks get syntax
colouring, the theme's code background, and a header line with the block's language and a
"Copy" link that copies exactly that block; prose gets readable line spacing and a line length
of at most `MEASURE` characters; the view sizes itself to
its content (the transcript scrolls, not the view).
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QFont,
    QGuiApplication,
    QSyntaxHighlighter,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QSizePolicy, QTextBrowser, QWidget

from app.ui.theme import current

_KEYWORDS = (
    r"\b(def|class|return|if|elif|else|for|while|in|import|from|as|with|try|except|finally|raise|"
    r"lambda|yield|async|await|pass|break|continue|and|or|not|is|None|True|False|function|const|"
    r"let|var|fn|pub|impl|struct|enum|match|use|mut|int|float|str|bool|void|public|private|static"
    r"|new|this|self|null|true|false)\b"
)
_PATTERNS = [  # coloured by the theme's syntax colours, in this order
    re.compile(_KEYWORDS),
    re.compile(r"\b\d+(\.\d+)?\b"),
    re.compile(r"(\"[^\"\n]*\"|'[^'\n]*')"),
    re.compile(r"(#|//).*$"),
]


class CodeHighlighter(QSyntaxHighlighter):
    """Colours keywords, numbers, strings and comments inside fenced code blocks."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._formats: list[tuple[re.Pattern[str], QTextCharFormat]] = []
        self.recolour()

    def recolour(self) -> None:
        """Take the current theme's syntax colours."""
        self._formats = []
        for pattern, colour in zip(_PATTERNS, current().syntax, strict=True):
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(colour))
            self._formats.append((pattern, fmt))

    def highlightBlock(self, text: str) -> None:
        block_format = self.currentBlock().blockFormat()
        if not block_format.hasProperty(QTextFormat.Property.BlockCodeFence):
            return
        for pattern, fmt in self._formats:
            for m in pattern.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), fmt)


_FENCE = ("```", "~~~")
MEASURE = 110  # characters a prose line may hold at most
LINE_HEIGHT = 135.0  # percent
PROPORTIONAL = QTextBlockFormat.LineHeightTypes.ProportionalHeight.value
_CODE = re.compile(r"^((?:```|~~~)[^\n]*\n.*?^(?:```|~~~)[^\n]*\n?)", re.S | re.M)


def _split(text: str) -> int:
    """The end of the last finished block in `text` (0: none): a blank line outside a code
    fence, or the line that closes a fence. Cuts are never inside a fence."""
    cut, fence, pos = 0, False, 0
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        pos += len(line)
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            fence = not fence
            if not fence:
                cut = pos
        elif not fence and not stripped:
            cut = pos
    return cut


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
        self._source = ""
        self._committed = 0  # characters of `_source` inserted as Markdown
        self._tail_start = 0  # document position where the plain-text tail begins
        self._code_blocks: list[str] = []
        self.highlighter = CodeHighlighter(self.document())
        self.anchorClicked.connect(self._anchor)
        self.document().documentLayout().documentSizeChanged.connect(self._fit)

    @property
    def source_text(self) -> str:
        return self._source

    def set_text(self, text: str) -> None:
        self.clear()
        self._source, self._committed, self._tail_start = "", 0, 0
        self._code_blocks = []
        self.append_text(text)

    def append_text(self, text: str) -> None:
        """Add streamed text; only the unfinished tail is laid out again."""
        if not text:
            return
        self._source += text
        pending = self._source[self._committed :]
        cut = _split(pending)
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if cut:
            self._insert_blocks(cursor, pending[:cut])
            self._committed += cut
            cursor.movePosition(QTextCursor.MoveOperation.End)
            self._tail_start = cursor.position()
        tail = self._source[self._committed :]
        if tail:
            cursor.insertText(tail)

    def finish(self) -> None:
        """The answer is complete: its last block is shown as Markdown too."""
        rest = self._source[self._committed :]
        if not rest:
            return
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._insert_blocks(cursor, rest if rest.endswith("\n") else rest + "\n")
        self._committed = len(self._source)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        self._tail_start = cursor.position()

    def _insert_blocks(self, cursor: QTextCursor, markdown: str) -> None:
        for part in _CODE.split(markdown):
            if not part.strip():
                continue
            start = cursor.position()
            code = part.lstrip().startswith(_FENCE)
            if code:
                head, _, body = part.lstrip().partition("\n")
                language = html.escape(head[3:].strip() or "code")
                self._code_blocks.append(body.rsplit(head[:3], 1)[0])
                copy = f'<a href="copy:{len(self._code_blocks) - 1}">Copy</a>'
                cursor.insertHtml(f"<small>{language}</small> · {copy}")
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            cursor.insertMarkdown(part)
            if code:
                self._shade(start, cursor.position())
            else:
                self._space(start, cursor.position())
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())  # out of any list or fence

    def _space(self, start: int, end: int) -> None:
        """Prose lines a little apart, paragraphs further (easier to read than Qt's default)."""
        block = self.document().findBlock(start)
        while block.isValid() and block.position() <= end:
            fmt = block.blockFormat()
            if not fmt.hasProperty(QTextFormat.Property.BlockCodeFence):
                fmt.setLineHeight(LINE_HEIGHT, PROPORTIONAL)
                fmt.setBottomMargin(max(fmt.bottomMargin(), 4.0))
                QTextCursor(block).setBlockFormat(fmt)
            block = block.next()

    def _shade(self, start: int, end: int) -> None:
        """A code block's lines (its label line too) on the theme's code background."""
        block = self.document().findBlock(start)
        while block.isValid() and block.position() <= end:
            fmt = block.blockFormat()
            fmt.setBackground(QColor(current().code))
            QTextCursor(block).setBlockFormat(fmt)
            block = block.next()

    def _anchor(self, url: QUrl) -> None:
        if url.scheme() == "copy":
            index = int(url.path() or url.toString().split(":", 1)[1])
            QGuiApplication.clipboard().setText(self._code_blocks[index])

    def code_blocks(self) -> list[str]:
        return list(self._code_blocks)

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


__all__ = ["CodeHighlighter", "MarkdownView", "monospace"]
