"""The debug pane: analysis, the exact prompt, the generated tokens (the token strip — tokens
coloured by probability, alternatives on hover — and their raw ids), and how the turn ran
(its figures, its timeline, sampling and parser events).

Guarantees: it holds text only while it is on; turning it off empties every page, so no
analysis stays anywhere in the widget tree; it shows the selected reply (the newest by
default) and follows it while it streams; its four pages' names fit its width at its default
size (no scroll arrows; a narrower pane elides them), each page has an accessible name and is
reached by keyboard (the tab row takes focus, arrows or Ctrl+Tab move); every special token of
the prompt is shown as its text, highlighted, decided by id from the model's own special tokens
(`special_tokens`, see `prompt.py`), and the prompt's token count is shown; a reply by another
model than the one whose vocabulary it holds is never decoded with it: the Prompt and Tokens
pages say who answered and how to see its tokens (`vocabulary.py`); its figures are
`Figures` of the reply's record, the status bar's and the footer's numbers (`run.py`);
secrets are redacted from everything it shows; an answer without analysis says why on the
Analysis page (`analysis_note.py`: "This model writes no analysis" for a model that does
not); nothing here is ever put on the clipboard by the transcript's Copy actions. Its
search box is the only place analysis can be searched (the sidebar's search never sees it);
a result shows its turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.controllers.chat import ChatController
from app.domain.history import Reply
from app.domain.redact import redact
from app.ui.debug.analysis_note import analysis_note, loaded_reasons
from app.ui.debug.events import append as _append
from app.ui.debug.prompt import Run, prompt_runs, show_prompt
from app.ui.debug.run import RunPage, text_box
from app.ui.debug.token_strip import TokenStrip
from app.ui.debug.vocabulary import unreadable, vocabulary_of

TOKENS_PER_SLICE = 500
PAGES = (  # (tab name, what the page holds: its tooltip)
    ("Analysis", "The model's reasoning (the analysis channel)"),
    ("Prompt", "The exact prompt the model read, special tokens highlighted"),
    ("Tokens", "The generated tokens, coloured by probability, and their raw ids"),
    ("Run", "How the turn ran: speed, timeline, sampling and parser events"),
)


class DebugTabs(QTabWidget):
    """The pane's pages; a widget on a page can be asked for (the page holding it shows)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        bar = self.tabBar()
        bar.setUsesScrollButtons(False)  # every name in view; a narrow pane elides them
        bar.setElideMode(Qt.TextElideMode.ElideRight)
        bar.setExpanding(False)

    def setCurrentWidget(self, widget: QWidget) -> None:
        for i in range(self.count()):
            page = self.widget(i)
            if page is not None and (page is widget or page.isAncestorOf(widget)):
                self.setCurrentIndex(i)
                return


class DebugPane(QDockWidget):
    """A dock with one page per kind of detail."""

    searched = Signal(str)  # the user searches the conversation's analysis
    turnChosen = Signal(int)  # a search result was clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Debug", parent)
        self.setObjectName("debugPane")
        self.setAccessibleName("Debug pane")
        self.token_table: Sequence[bytes] = ()
        self.special_tokens: Mapping[int, bytes] = {}  # the model's, by id, spelled out
        self.vocabulary = ""  # the model the token table is of (`vocabulary.py`)
        self.loaded = ""  # the model loaded now
        self.reasons: bool | None = None  # whether it writes analysis (`analysis_note.py`)
        body = QWidget(self)
        column = QVBoxLayout(body)
        self._build_search(body, column)
        self._build_tabs(body)
        column.addWidget(self.tabs)
        self.setWidget(body)
        self._prompt_runs: list[Run] = []
        self._shown_prompt: tuple[object, ...] = ()
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
        """One page per kind of detail, each named for screen readers and its tab explained."""
        self.tabs = DebugTabs(body)
        self.tabs.setAccessibleName("Debug details")
        self.analysis = text_box("Analysis", self.tabs)
        self.run = RunPage(self.tabs)
        self.timeline, self.details, self.events = (
            self.run.timeline,
            self.run.details,
            self.run.events,
        )
        pages = (self.analysis, self._build_prompt_page(), self._build_tokens_page(), self.run)
        bar = self.tabs.tabBar()
        for i, (page, (name, said)) in enumerate(zip(pages, PAGES, strict=True)):
            page.setAccessibleName(name)
            self.tabs.addTab(page, name)
            self.tabs.setTabToolTip(i, said)
            bar.setAccessibleTabName(i, name)

    def _build_prompt_page(self) -> QWidget:
        """The prompt, with its token count above it."""
        page = QWidget(self.tabs)
        layout = QVBoxLayout(page)
        self.prompt_count = QLabel(page)
        self.prompt_count.setAccessibleName("Prompt tokens")
        self.prompt = text_box("Rendered prompt", page)
        layout.addWidget(self.prompt_count)
        layout.addWidget(self.prompt)
        return page

    def _build_tokens_page(self) -> QWidget:
        """The token strip above the raw ids, the border between them movable."""
        page = QSplitter(Qt.Orientation.Vertical, self.tabs)
        strip_page = QScrollArea(page)
        strip_page.setWidgetResizable(True)
        strip_page.setAccessibleName("Token strip")
        self.strip = TokenStrip(self._piece, strip_page, special=self._is_special)
        strip_page.setWidget(self.strip)
        self.tokens = text_box("Generated tokens", page)
        page.addWidget(strip_page)
        page.addWidget(self.tokens)
        page.setStretchFactor(0, 3)
        page.setStretchFactor(1, 2)
        return page

    def use_vocabulary(self, controller: ChatController) -> None:
        """Read ids with the controller's vocabulary, knowing which model it is of."""
        self.token_table = controller.token_table
        self.special_tokens = controller.special_tokens
        self.vocabulary, self.loaded = vocabulary_of(controller), controller.host.name
        self.reasons = loaded_reasons(controller)

    def _is_special(self, token: int) -> bool:
        return token in self.special_tokens

    def _piece(self, token: int) -> str:
        spelled = self.special_tokens.get(token)
        if spelled is not None:
            return spelled.decode("utf-8", errors="replace")
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
        for box in (self.analysis, self.tokens, self.prompt):
            box.clear()
        self.prompt_count.clear()
        self.analysis.setPlaceholderText("")
        self.strip.show_scores([])
        self.run.clear()
        self._prompt_runs = []
        self._shown_prompt = ()
        self._shown = (-1, 0, 0, 0)
        self._backlog = []

    def show_reply(self, reply: Reply | None) -> None:
        """Show `reply`; while it streams only what is new is added (no re-layout of the rest)."""
        if not self.isVisible() or reply is None:
            self.clear_all()
            return
        d = reply.debug
        if self._other_model(reply):
            return
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
        if len(d.events) > n_events:
            self.run.log.add(d.events[n_events:])
        self._shown = (id(reply), len(d.analysis), len(d.token_ids), len(d.events))
        self._show_prompt(d.prompt_ids)
        self.analysis.setPlaceholderText(analysis_note(reply, self.loaded, self.reasons))
        self.run.show_reply(reply)

    def _other_model(self, reply: Reply) -> bool:
        """A reply by another model: said, its ids never read with this vocabulary."""
        why = unreadable(reply, self.vocabulary, self.loaded)
        if not why:
            return False
        self.clear_all()
        self.prompt_count.setText(why)
        self.tokens.setPlainText(why)
        _append(self.analysis, redact(reply.debug.analysis))  # text: its own, whoever wrote it
        self.run.log.add(reply.debug.events)
        self.analysis.setPlaceholderText(analysis_note(reply, self.loaded, self.reasons))
        self.run.show_reply(reply)
        return True

    def _show_prompt(self, ids: tuple[int, ...]) -> None:
        """The prompt, drawn again only when it (or the vocabulary it is read with) changed."""
        key = (ids, id(self.token_table), id(self.special_tokens))
        if key == self._shown_prompt:
            return
        self._shown_prompt = key
        self._prompt_runs = prompt_runs(ids, self.token_table, self.special_tokens)
        show_prompt(self.prompt, self._prompt_runs)
        marked = sum(1 for _, special in self._prompt_runs if special)
        self.prompt_count.setText(f"{len(ids)} prompt tokens · {marked} special" if ids else "")

    def theme_changed(self) -> None:
        """The special tokens' highlight in the new theme's colours."""
        if self._prompt_runs:
            show_prompt(self.prompt, self._prompt_runs)


__all__ = ["DebugPane", "DebugTabs"]
