"""The debug pane: analysis, the exact prompt, raw tokens, the token strip (tokens coloured by
probability, alternatives on hover), the turn's timeline, parser events, sampling and timings.

Guarantees: it holds text only while it is on; turning it off empties every tab, so no
analysis stays anywhere in the widget tree; it shows the selected reply (the newest by
default) and follows it while it streams; special tokens in the prompt are highlighted and
the prompt's token count is shown; secrets are redacted from everything it shows; nothing
here is ever put on the clipboard by the transcript's Copy actions. Its search box is the only
place analysis can be searched (the sidebar's search never sees it); a result shows its turn.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QScrollArea,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.domain.history import Reply
from app.domain.redact import redact
from app.ui.markdown_view import monospace
from app.ui.theme import current
from app.ui.timeline import TurnTimeline
from app.ui.token_strip import TokenStrip


def _text_box(name: str, parent: QWidget) -> QPlainTextEdit:
    box = QPlainTextEdit(parent)
    box.setReadOnly(True)
    box.setFont(monospace())
    box.setAccessibleName(name)
    return box


TOKENS_PER_SLICE = 500


def _special() -> str:
    t = current()
    return f"background:{t.special};color:{t.special_text}"


class DebugPane(QDockWidget):
    """A dock with one tab per kind of detail."""

    searched = Signal(str)  # the user searches the conversation's analysis
    turnChosen = Signal(int)  # a search result was clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Debug", parent)
        self.setObjectName("debugPane")
        self.setAccessibleName("Debug pane")
        body = QWidget(self)
        column = QVBoxLayout(body)
        self._build_search(body, column)
        self._build_tabs(body)
        column.addWidget(self.tabs)
        self.setWidget(body)
        self.token_table: Sequence[bytes] = ()
        self._shown_prompt: tuple[int, ...] = ()
        self._shown = (-1, 0, 0, 0)  # the reply shown, and how much of it
        self._backlog: list[int] = []
        self._drain = QTimer(self)
        self._drain.setInterval(0)
        self._drain.timeout.connect(self._drain_tokens)

    def _build_search(self, body: QWidget, column: QVBoxLayout) -> None:
        """The analysis search box, and its matches below it (hidden until there are some)."""
        self.search = QLineEdit(body)
        self.search.setPlaceholderText("Search the analysis of this chat")
        self.search.setAccessibleName("Search analysis")
        self.search.returnPressed.connect(lambda: self.searched.emit(self.search.text()))
        self.found = QListWidget(body)
        self.found.setAccessibleName("Analysis matches")
        self.found.setMaximumHeight(120)
        self.found.hide()
        self.found.itemActivated.connect(self._chosen)
        self.found.itemClicked.connect(self._chosen)
        column.addWidget(self.search)
        column.addWidget(self.found)

    def _build_tabs(self, body: QWidget) -> None:
        """One tab per kind of detail."""
        self.tabs = QTabWidget(body)
        self.tabs.setAccessibleName("Debug details")
        self.analysis = _text_box("Analysis", self.tabs)
        prompt_page = self._build_prompt_page()
        self.tokens = _text_box("Generated tokens", self.tabs)
        strip_page = QScrollArea(self.tabs)
        strip_page.setWidgetResizable(True)
        strip_page.setAccessibleName("Token strip")
        self.strip = TokenStrip(self._piece, strip_page)
        strip_page.setWidget(self.strip)
        self.timeline = TurnTimeline(self.tabs)
        self.events = _text_box("Parser events", self.tabs)
        self.details = _text_box("Sampling and timings", self.tabs)
        self.tabs.addTab(self.analysis, "Analysis")
        self.tabs.addTab(prompt_page, "Prompt")
        self.tabs.addTab(self.tokens, "Tokens")
        self.tabs.addTab(strip_page, "Strip")
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.addTab(self.events, "Events")
        self.tabs.addTab(self.details, "Details")

    def _build_prompt_page(self) -> QWidget:
        """The rendered prompt, with its token count above it."""
        prompt_page = QWidget(self.tabs)
        layout = QVBoxLayout(prompt_page)
        self.prompt_count = QLabel(prompt_page)
        self.prompt = QTextEdit(prompt_page)
        self.prompt.setReadOnly(True)
        self.prompt.setFont(monospace())
        self.prompt.setAccessibleName("Rendered prompt")
        layout.addWidget(self.prompt_count)
        layout.addWidget(self.prompt)
        return prompt_page

    def _piece(self, token: int) -> str:
        if 0 <= token < len(self.token_table):
            return self.token_table[token].decode("utf-8", errors="replace")
        return f"<{token}>"

    def _drain_tokens(self) -> None:
        chunk, self._backlog = self._backlog[:TOKENS_PER_SLICE], self._backlog[TOKENS_PER_SLICE:]
        _append(self.tokens, "".join(f"{t}\t{self._piece(t)!r}\n" for t in chunk))
        if not self._backlog:
            self._drain.stop()

    def show_found(self, found: list[tuple[int, str]]) -> None:
        """The turns whose analysis matched, each with the text around the match."""
        self.found.clear()
        if not self.isVisible():  # turned off meanwhile: no analysis stays here
            self.found.hide()
            return
        for turn, text in found:
            item = QListWidgetItem(f"Turn {turn + 1}: {redact(text)}")
            item.setData(Qt.ItemDataRole.UserRole, turn)
            self.found.addItem(item)
        if not found and self.search.text().strip():
            self.found.addItem("No analysis in this chat matches")
        self.found.setVisible(self.found.count() > 0)

    def _chosen(self, item: QListWidgetItem) -> None:
        turn = item.data(Qt.ItemDataRole.UserRole)
        if isinstance(turn, int):
            self.turnChosen.emit(turn)

    def forget(self) -> None:
        """Empty everything, the search and its results included (the pane was turned off,
        or another chat is shown)."""
        self.clear_all()
        self.search.clear()
        self.found.clear()
        self.found.hide()

    def clear_all(self) -> None:
        for box in (self.analysis, self.tokens, self.events, self.details):
            box.clear()
        self.prompt.clear()
        self.prompt_count.clear()
        self.strip.show_scores([])
        self.timeline.show_turn([], [])
        self._shown_prompt = ()
        self._shown = (-1, 0, 0, 0)
        self._backlog = []

    def show_reply(self, reply: Reply | None) -> None:
        """Show `reply`; while it streams only what is new is added (no re-layout of the rest)."""
        if not self.isVisible() or reply is None:
            self.clear_all()
            return
        d = reply.debug
        shown = self._shown
        if shown[0] != id(reply) or len(d.analysis) < shown[1] or len(d.token_ids) < shown[2]:
            self.clear_all()
            shown = (id(reply), 0, 0, 0)
        _, n_analysis, n_tokens, n_events = shown
        if len(d.analysis) > n_analysis:
            _append(self.analysis, redact(d.analysis[n_analysis:]))
        if len(d.token_ids) > n_tokens:  # in slices, so a long message never stalls the window
            self._backlog.extend(d.token_ids[n_tokens:])
            self._drain.start()
        drawn = len(self.strip.scores)
        if d.text_scores and len(d.text_scores) != drawn:  # a remote endpoint's, as text
            self.strip.show_text_scores(d.text_scores)
        elif len(d.token_scores) > drawn:  # the new tokens only
            self.strip.add_scores(d.token_scores[drawn:])
        if d.spans != self.timeline.spans or len(d.token_times) != len(self.timeline.times):
            self.timeline.show_turn(d.spans, d.token_times)
        if len(d.events) > n_events:
            _append(self.events, "".join(redact(e) + "\n" for e in d.events[n_events:]))
        self._shown = (id(reply), len(d.analysis), len(d.token_ids), len(d.events))
        if d.prompt_ids != self._shown_prompt:
            self._shown_prompt = d.prompt_ids
            parts = []
            for t in d.prompt_ids:
                piece = html.escape(redact(self._piece(t)))
                special = piece.startswith("&lt;|") and piece.endswith("|&gt;")
                parts.append(f"<span style='{_special()}'>{piece}</span>" if special else piece)
            self.prompt.setHtml("<pre>" + "".join(parts) + "</pre>")
            self.prompt_count.setText(f"{len(d.prompt_ids)} prompt tokens")
        timings = "\n".join(f"{k}: {v}" for k, v in d.timings.items())
        self.details.setPlainText(
            redact(
                f"model: {reply.model}\nsampling: {d.sampling}\n"
                f"stop reason: {d.stop_reason}\n{timings}"
            )
        )


def _append(box: QPlainTextEdit, text: str) -> None:
    cursor = box.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    cursor.insertText(text)


__all__ = ["DebugPane"]
