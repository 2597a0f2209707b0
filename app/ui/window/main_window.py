"""The main window: a folding conversation list, one header row, the transcript and the composer
in a centred reading column, the status bar and the debug pane.

Guarantees: every slow action (loading a model, generating, running tools) is started here and
awaited elsewhere, so the window stays responsive; load errors and failed replies are shown in
the window, which survives them; Ctrl+N, Ctrl+K, Ctrl+D, Enter, Shift+Enter and Esc work as the
README says (Esc stops the open chat's answer from anywhere in the window); switching chats or
starting one while an answer streams works (the answer goes on, new messages queue); the
debug pane is off by default and its last state is remembered. The menus are built by
`menus.py` and the dialogs the window opens live in `dialogs.py`; both take the window,
and every action and page stays reachable as an attribute or method of it. The conversation
has the window's height but for one header row and the composer (the instructions fold into a
button, the first run's welcome is part of the empty conversation); the window works down to
`MINIMUM`, and the list folds away in a narrow one (`sidebar/fold.py`, `toggle_sidebar`).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QResizeEvent, QShortcut, QTextCursor
from PySide6.QtWidgets import QMainWindow, QSplitter, QVBoxLayout, QWidget

from app.controllers import preferences
from app.controllers.attachments import library, send_with
from app.controllers.background import Background
from app.controllers.chat import ChatController
from app.controllers.fit import fit_of
from app.controllers.library_host import LibraryHost
from app.controllers.mcp_host import McpHost
from app.controllers.model_host import ModelHost
from app.controllers.ui_state import UiState
from app.domain.messages import ReasoningEffort
from app.ui.column import centred
from app.ui.composer.composer import Composer
from app.ui.composer.overflow_menu import OverflowMenu
from app.ui.debug.pane import DebugPane
from app.ui.mcp.page import McpPage
from app.ui.models.page import ModelsPage
from app.ui.problem_banner import ProblemBanner
from app.ui.settings.dialog import SettingsDialog
from app.ui.sidebar.fold import SidebarFold
from app.ui.sidebar.sidebar import Sidebar
from app.ui.transcript.reading import ReadingNote
from app.ui.transcript.view import TranscriptView
from app.ui.window import dialogs, menus
from app.ui.window.about import Welcome
from app.ui.window.compaction_controls import CompactionControls
from app.ui.window.context_ways import ContextWays
from app.ui.window.file_menus import RecentMenu, TrashMenu
from app.ui.window.fitted_status import FittedStatusBar
from app.ui.window.header import Header
from app.ui.window.instructions_fold import InstructionsFold
from app.ui.window.serve_switch import ServeSwitch
from app.ui.window.status_line import StatusLine

MINIMUM = (640, 480)  # the smallest window: the conversation stays usable down to it
SIDEBAR_PX = 240


class MainWindow(QMainWindow):
    """The Harmony Desk window."""

    # made by `menus.build`: File, View and Help
    new_action: QAction
    open_action: QAction
    models_action: QAction
    settings_action: QAction
    preferences_action: QAction
    debug_action: QAction
    search_action: QAction
    recent_menu: RecentMenu
    trash_menu: TrashMenu
    serve: ServeSwitch

    def __init__(
        self,
        controller: ChatController,
        state: UiState | None = None,
        library: LibraryHost | None = None,
    ) -> None:
        super().__init__()
        self.controller = controller
        self.library = library or LibraryHost()
        self.mcp = McpHost(controller.tools.mcp)  # File ▸ MCP servers…, and the Tools… menu
        self.jobs = Background("window-jobs", self.show_problem)
        self.sending: asyncio.Future[Any] | None = None  # a message with files, on its way
        self.context_length = 4096  # the settings' (`dialogs.follow_settings`)
        self.threads: int | None = None  # None: the physical cores less one
        self.models_page: ModelsPage | None = None
        self.host: ModelHost = controller.host
        self.state = state or UiState()
        self.settings_watch = preferences.SettingsWatch()  # the settings the window applies
        self._debug_turn = -1  # the turn the debug pane shows; -1: the newest
        self.setWindowTitle("Harmony Desk")
        self.setMinimumSize(*MINIMUM)
        self.resize(1100, 760)
        # built in this order: the widgets' creation order is the keyboard's tab order
        self.sidebar = Sidebar(controller, self)
        self._arrange(self._build_center())
        self.sidebar_fold.fit(self.width())
        menus.build(self)
        self._wire()
        self.choose_model = self.model_label.install(self, self.library, self.show_models)  # Ctrl+L
        self._start()

    # --- set-up --------------------------------------------------------------------------

    def _build_center(self) -> QWidget:
        """The middle column: the header row, the problem banner, the instructions (folded),
        the transcript and the composer; the last three in the centred reading column."""
        center = QWidget(self)
        column = QVBoxLayout(center)
        column.setContentsMargins(0, 0, 0, 6)
        column.setSpacing(0)
        self.header = Header(
            self.controller,
            self.host,
            self.load_model,
            lambda: dialogs.open_model_file(self),
            center,
        )
        h = self.header
        self.model_label, self.progress, self.cancel_load = h.picker, h.progress, h.cancel_load
        self.open_model, self.picker = h.open_model, h.endpoint
        column.addWidget(h)
        self.banner = ProblemBanner(center)  # one sentence, the details behind a disclosure
        column.addWidget(self.banner)
        self.instructions_fold = InstructionsFold(center, h.instructions_button)
        self.instructions = self.instructions_fold.editor
        column.addWidget(centred(self.instructions_fold, center))
        self.transcript = TranscriptView(self.controller, center)
        self.reading = ReadingNote(self.transcript)  # "Reading 3,626 tokens… 40 %", inline
        column.addWidget(self.transcript, 1)
        self.welcome: Welcome | None = None  # a first run: where answers come from, at length
        if not self.state.get("welcomed", False):
            self.welcome = self.transcript.empty_state.add_welcome()
            self.welcome.close_button.clicked.connect(self._welcomed)
        self.composer = Composer(center, partial(fit_of, self.controller))
        column.addWidget(centred(self.composer, center))
        return center

    def _arrange(self, center: QWidget) -> None:
        """The sidebar beside the middle column (it folds: `sidebar/fold.py`), the debug pane
        docked on the right, and the status bar."""
        split = QSplitter(self)
        split.setChildrenCollapsible(False)
        split.addWidget(self.sidebar)
        split.addWidget(center)
        split.setStretchFactor(1, 1)
        split.setSizes([SIDEBAR_PX, 1100 - SIDEBAR_PX])
        self.setCentralWidget(split)
        self.sidebar_fold = SidebarFold(self.sidebar, self.header.sidebar_button, self.state)
        self.debug = DebugPane(self)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.debug)
        self.setStatusBar(FittedStatusBar(self))  # a long sentence cut with …, whole on hover
        self.status = StatusLine(self.statusBar())
        self.status_speed, self.status_context = self.status.speed, self.status.context

    def toggle_sidebar(self) -> None:
        """Show the conversation list if hidden, hide it if shown (View ▸ Sidebar, Ctrl+B)."""
        self.sidebar_fold.toggle()

    def sidebar_shown(self) -> bool:
        return self.sidebar_fold.shown()

    def resizeEvent(self, event: QResizeEvent) -> None:
        self.sidebar_fold.fit(event.size().width())  # a narrow window folds the list away
        super().resizeEvent(event)

    def _start(self) -> None:
        """The saved settings and debug pane state; the model, if one is loaded already."""
        dialogs.follow_settings(self)
        self.set_debug(bool(self.state.get("debug_pane", False)), remember=False)
        if self.host.ready:
            self._loaded(self.host.name)
        problems = self.host.template_problems()
        if problems:  # the window starts all the same; the user learns which file and why
            self.show_problem("A template file was not used: " + "; ".join(problems))

    def _wire(self) -> None:
        c, host, comp = self.controller, self.host, self.composer
        comp.submitted.connect(self.send)
        comp.tray.sees_images = lambda: c.sees_images  # the composer says when it cannot
        comp.mentionRequested.connect(lambda: self.jobs.run(library, comp.set_documents))
        comp.stopRequested.connect(c.stop_shown)  # only the open chat's answer
        comp.bind(c)  # the open chat's queued messages (above the field) and its draft
        self.context_ways = ContextWays(self)  # raise, compact, a new chat; the count follows
        self.escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)  # stops from anywhere
        self.escape.setEnabled(False)  # only while an answer streams: Esc is Esc otherwise
        self.escape.activated.connect(c.stop_shown)
        comp.tools_button.clicked.connect(lambda: dialogs.choose_tools(self))
        comp.offline.toggled.connect(c.set_offline)
        comp.library.toggled.connect(c.set_library)
        self.overflow_menu = OverflowMenu(comp.field.more_menu, c)  # saved with the chat
        self.compaction = CompactionControls(self.status, c, self.overflow_menu)  # /compact
        self.open_model.clicked.connect(lambda: dialogs.open_model_file(self))
        self.cancel_load.clicked.connect(host.cancel_load)
        self.instructions_fold.edited.connect(lambda text: setattr(c.doc, "instructions", text))
        self.transcript.promptChosen.connect(self._use_prompt)
        c.docChanged.connect(self._doc_changed)
        self.transcript.turnSelected.connect(self._select_turn)
        self.debug.searched.connect(self.controller.search_analysis)
        self.debug.turnChosen.connect(self._select_turn)
        self.controller.analysisFound.connect(self.debug.show_found)
        c.busyChanged.connect(self._busy)
        self.status.follow(c)  # the open chat's figures (`status_follow.py`)
        c.notice.connect(lambda text: self.statusBar().showMessage(text, 15_000))
        self.library.downloaded.connect(
            lambda path: self.statusBar().showMessage(f"Downloaded {path}", 15_000)
        )
        c.storeFailed.connect(self._store_failed)
        c.debugChanged.connect(self._debug_changed)
        c.replyStarted.connect(self._reply_started)
        host.progress.connect(lambda f: self.progress.setValue(int(f * 100)))
        host.loaded.connect(self._loaded)
        host.templateChanged.connect(self.show_features)
        host.loadFailed.connect(self.show_problem)
        host.stateChanged.connect(lambda s: self.status.worker.setText(f"worker: {s}"))

    # --- actions -------------------------------------------------------------------------

    def send(self) -> None:
        comp = self.composer
        if self.compaction.command(comp.box.toPlainText()):  # /compact, /compact undo
            comp.box.clear()
            return
        effort = comp.effort_value()
        self.controller.effort = ReasoningEffort(effort) if effort else None
        schema = None
        if comp.json_mode.isChecked():
            schema = comp.check_schema()
            if schema is None:
                self.show_problem("The JSON schema is not valid; see the note under it.")
                return
        self.controller.json_schema = schema
        if not self.controller.can_answer:
            self.show_problem("No model is loaded yet: open a GGUF model or wait for the default.")
            return
        carries = comp.files or self.controller.doc.library
        text = comp.box.toPlainText()
        if self.controller.queue.must_wait:  # an answer streams: it waits (`send_queue.py`)
            self.controller.queue.add(text, comp.images, comp.take_files())
        elif carries and text.strip():
            files, images = comp.take_files(), comp.take_images()
            self.sending = asyncio.ensure_future(send_with(self.controller, text, files, images))
        elif not self.controller.send(text, comp.images):
            return
        comp.box.clear()
        comp.take_images()  # sent with the message
        self.banner.hide()

    def _store_failed(self, why: str) -> None:
        self.show_problem(f"Could not save this conversation: {why}. It stays open here.")

    def show_problem(self, text: str, details: str = "") -> None:
        """A problem in one sentence, its technical details behind Details; dismissable."""
        self.banner.show_problem(text, details)
        self.progress.hide()
        self.cancel_load.hide()

    def load_model(
        self, path: str | None = None, *, n_ctx: int | None = None, threads: int | None = None
    ) -> asyncio.Task[bool]:
        """Load `path` (None: the bundled model) with `n_ctx` tokens of context (None: the
        configured `context_length`, which also becomes the context of later loads)."""
        if n_ctx is None:
            n_ctx = self.context_length
        else:
            self.context_length = n_ctx
        self.progress.setValue(0)
        self.progress.show()
        self.cancel_load.show()
        self.banner.hide()
        threads = threads or self.threads
        return asyncio.ensure_future(self.host.load(path, n_ctx=n_ctx, threads=threads))

    def show_settings(self) -> SettingsDialog:
        """File ▸ Settings… (`dialogs.show_settings`)."""
        return dialogs.show_settings(self)

    def show_mcp(self) -> McpPage:
        """File ▸ MCP servers… (`dialogs.show_mcp`)."""
        return dialogs.show_mcp(self)

    def insert_offer(self, what: tuple[str, str, str], arguments: dict[str, str]) -> None:
        """An MCP prompt or resource, read off the GUI thread, into the message box."""
        self.jobs.run(lambda: self.mcp.offer(what, arguments), self.composer.box.insertPlainText)

    def set_debug(self, on: bool, remember: bool = True) -> None:
        """Show or hide the debug pane; hidden, it holds no text at all (and tokens are not
        scored: scoring costs a pass over the vocabulary per token)."""
        if self.debug_action.isChecked() != on:
            self.debug_action.blockSignals(True)
            self.debug_action.setChecked(on)
            self.debug_action.blockSignals(False)
        self.debug.setVisible(on)
        self.controller.score_tokens = on  # its token strip: tokens with their probabilities
        if on:
            self._debug_changed(len(self.controller.doc.turns) - 1)
        else:
            self.debug.forget()
        if remember:  # written off the GUI thread: an atomic write waits for the disk
            self.state.set_later("debug_pane", on)

    def _reply_started(self, turn: int) -> None:
        self._debug_turn = -1  # a new answer: follow it
        self._debug_changed(turn)

    def _select_turn(self, turn: int) -> None:
        """Show this turn's answer in the debug pane (the newest one is shown by default)."""
        self._debug_turn = turn
        self._debug_changed(turn)

    def _debug_changed(self, turn: int) -> None:
        if not self.debug.isVisible():
            return
        turns = self.controller.doc.turns
        shown = self._debug_turn if 0 <= self._debug_turn < len(turns) else len(turns) - 1
        if 0 <= turn < len(turns) and turn == shown and self.controller.debug_ready(turn):
            self.debug.use_vocabulary(self.controller)  # and which model it is of
            self.debug.show_reply(turns[turn].version.reply)

    def _doc_changed(self) -> None:
        self._debug_turn = -1
        self.debug.forget()  # another chat: its own analysis only
        for box, on in (
            (self.composer.offline, self.controller.doc.offline),
            (self.composer.library, self.controller.doc.library),
        ):
            box.blockSignals(True)
            box.setChecked(on)
            box.blockSignals(False)
        self.instructions_fold.set_text(self.controller.doc.instructions)
        self._debug_changed(len(self.controller.doc.turns) - 1)
        self.show_features()
        self._busy(self.controller.busy)

    def _busy(self, busy: bool) -> None:
        """Send becomes Stop (saying which chat it stops, when another is shown); Esc stops."""
        answering = self.controller.answering
        elsewhere = busy and answering is not None and not self.controller.shows_answer
        self.composer.set_busy(busy, answering.title if elsewhere and answering else "")
        self.escape.setEnabled(busy and not elsewhere)  # never stops another chat's answer
        self.status.busy(busy)
        if elsewhere and answering is not None:
            self.statusBar().showMessage(
                f"The answer in “{answering.title}” goes on (marked ● in the list).", 15_000
            )

    def show_features(self) -> None:
        """The composer offers what the conversation's model has; tools the conversation has
        on, for a model that cannot call them, are said in the banner."""
        tools, effort = self.controller.model_features()
        self.composer.set_features(tools, effort)
        self.composer.set_tools_on(len(self.controller.doc.tools))  # "Tools · 2"
        if not tools and self.controller.doc.tools:
            self.show_problem(
                "This model's chat template has no tool-call format: this conversation's tools"
                f" ({', '.join(self.controller.doc.tools)}) are not offered to it."
            )

    def _loaded(self, name: str) -> None:
        self.model_label.set_loaded(name)
        self.show_features()
        self.status.loaded(name, self.host.runs_on)
        self.library.gpu_offload = self.host.gpu_offload  # the models page's memory split
        self.progress.hide()
        self.cancel_load.hide()

    def _welcomed(self) -> None:
        self.state.set_later("welcomed", True)  # the empty state hid it

    def _use_prompt(self, text: str) -> None:
        """A starter prompt goes into the message box, ready to edit or send."""
        box = self.composer.box
        box.setPlainText(text)
        box.moveCursor(QTextCursor.MoveOperation.End)
        box.setFocus()

    def show_models(self) -> ModelsPage:
        """File ▸ Models… (`dialogs.show_models`): one page, kept while the window lives."""
        return dialogs.show_models(self)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.serve.set_on(False)
        self.controller.close()
        self.library.close()  # running downloads pause; their partial files stay
        super().closeEvent(event)


__all__ = ["MainWindow", "UiState"]
