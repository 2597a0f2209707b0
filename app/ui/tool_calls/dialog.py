"""The Tool calls view: the open chat's tool calls from the audit — what ran, with what
arguments, the result, and who approved it when.

Guarantees: the view lists the open chat's calls, oldest first, one row each (when, the tool
by its readable name, the outcome, who decided), reads them off the GUI thread
(`app/controllers/tool_calls_view.py`) and says so while it reads, and says in a sentence when
the chat has made none or the audit could not be read; the chosen call (the newest, at first)
is written out whole below the list, read-only, to read or copy: the arguments the model sent,
those that ran when the user edited them, and the whole result or error. It follows the chat
the window shows and its finished answers while it is open, is one window per main window
(`show_tool_calls` raises it when it is open already), and fits a 640×480 screen (the list and
the details share its height; each scrolls). Its status line names the audit file shortened
(`~/…`, or the file's name) with the whole path in its tooltip. Export… writes the chat's calls
(what ran, with what, the result, who approved) to a file the user picks in the app's file
dialog (`app/ui/start_folder.py`), as JSON Lines or Markdown (the kind picked, or the name's
suffix; the kind's suffix is added to a name with none), with the one audit writer
(`app/tools/audit_export.py`) off the GUI thread, and says where it wrote them or why not; a
dialog closed without a choice writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.controllers.chat import ChatController
from app.controllers.tool_calls_view import (
    CallRow,
    CallsRead,
    Exported,
    Format,
    ToolCallsView,
    shown_path,
)
from app.ui.markdown.view import monospace
from app.ui.start_folder import save_file
from app.ui.theme import mark
from app.ui.window.exchange_dialogs import file_name

COLUMNS = ("When", "Tool", "Outcome", "Decided by")
SIZE = (820, 560)  # at most; a smaller window gets a smaller view
MARGIN = 40  # kept free around it inside the main window
KINDS: dict[Format, str] = {"jsonl": "JSON Lines (*.jsonl)", "md": "Markdown (*.md)"}


class ToolCallsDialog(QDialog):
    """See the module guarantees."""

    shown = Signal()  # a read of the audit is on screen
    exported = Signal()  # an export is done (or said why not)

    def __init__(
        self, controller: ChatController, parent: QWidget, view: ToolCallsView | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("toolCalls")
        self.setAccessibleName("Tool calls in this chat")
        self.controller = controller
        self.view = view or ToolCallsView(parent=self)
        self.rows: tuple[CallRow, ...] = ()
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("What the tool calls view shows")
        self.table = self._build_table()
        self.detail = QPlainTextEdit(self)
        self.detail.setReadOnly(True)
        self.detail.setFont(monospace())
        self.detail.setAccessibleName("The chosen tool call, whole")
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.setChildrenCollapsible(False)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setStretchFactor(1, 2)  # the chosen call's details get the larger share
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.setAccessibleName("Read the tool audit again")
        buttons.addButton(self.refresh_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.export_button = QPushButton("Export…", self)
        self.export_button.setAccessibleName("Export this chat's tool calls to a file")
        self.export_button.setToolTip("Write these calls to a file, as JSON Lines or Markdown")
        self.export_button.setEnabled(False)  # until there are calls to write
        buttons.addButton(self.export_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        self.refresh_button.clicked.connect(self.reload)
        self.export_button.clicked.connect(self.export)
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)
        layout.addWidget(buttons)
        self.fit_to(parent)
        self.view.loaded.connect(self._show)
        self.view.exported.connect(self._exported)
        controller.docChanged.connect(self._followed)
        controller.replyFinished.connect(lambda _turn: self._followed())
        self.reload()

    def _build_table(self) -> QTreeWidget:
        table = QTreeWidget(self)
        table.setColumnCount(len(COLUMNS))
        table.setHeaderLabels(COLUMNS)
        table.setRootIsDecorated(False)
        table.setUniformRowHeights(True)
        table.setAccessibleName("Tool calls")
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = table.header()
        header.setStretchLastSection(True)
        for i in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
        table.currentItemChanged.connect(lambda *_: self._chosen())
        return table

    def fit_to(self, parent: QWidget) -> None:
        """At most `SIZE`, and never larger than the main window less `MARGIN`."""
        width = min(SIZE[0], max(320, parent.width() - MARGIN))
        height = min(SIZE[1], max(240, parent.height() - MARGIN))
        self.setMinimumSize(min(360, width), min(240, height))
        self.resize(width, height)

    def reload(self) -> None:
        """Read the open chat's calls again."""
        doc = self.controller.doc
        self.setWindowTitle(f"Tool calls — {doc.title or 'New chat'}")
        self.status.setText("Reading the tool audit…")
        self.view.load(doc.id)

    def _followed(self) -> None:
        if self.isVisible():  # a closed view reads nothing
            self.reload()

    def _show(self, read: CallsRead) -> None:
        self.rows = read.rows
        self.table.clear()
        for row in read.rows:
            item = QTreeWidgetItem([row.when, row.tool, row.outcome, row.approver])
            item.setToolTip(1, f"The model called it {row.called}")
            self.table.addTopLevelItem(item)
        self.status.setText(_said(read, shown_path(self.view.path)))
        self.status.setToolTip(self.view.path)
        mark(self.status, "error" if read.problem else "muted")
        self.export_button.setEnabled(bool(read.rows))
        newest = self.table.topLevelItem(len(read.rows) - 1) if read.rows else None
        if newest is not None:
            self.table.setCurrentItem(newest)
        else:
            self.detail.clear()
        self.shown.emit()

    def export(self) -> None:
        """Ask for a file and write the chat's calls to it (nothing when none is chosen)."""
        doc = self.controller.doc
        suggested = f"{file_name(doc.title or 'New chat')} tool calls.jsonl"
        path, chosen = save_file(
            self, "Export the tool calls", suggested, ";;".join(KINDS.values())
        )
        if not path:
            return
        fmt = _kind(path, chosen)
        out = path if Path(path).suffix else f"{path}.{fmt}"
        self.export_button.setEnabled(False)  # one export at a time
        self.status.setText(f"Exporting the tool calls to {shown_path(out)}…")
        self.view.export(doc.id, out, fmt, doc.title)

    def _exported(self, done: Exported) -> None:
        self.export_button.setEnabled(bool(self.rows))
        if done.problem:
            self.status.setText(done.problem)
            mark(self.status, "error")
        else:
            plural = "" if done.calls == 1 else "s"
            self.status.setText(f"Exported {done.calls} call{plural} to {shown_path(done.path)}.")
            self.status.setToolTip(f"{self.view.path}\nExported to {done.path}")
            mark(self.status, "muted")
        self.exported.emit()

    def _chosen(self) -> None:
        item = self.table.currentItem()
        index = self.table.indexOfTopLevelItem(item) if item is not None else -1
        if 0 <= index < len(self.rows):
            self.detail.setPlainText(self.rows[index].details())


def _said(read: CallsRead, path: str) -> str:
    if read.problem:
        return read.problem
    if not read.rows:
        return (
            "No tool calls in this chat yet. When the model calls a tool, the call, its"
            " arguments, its result and who allowed it are listed here."
        )
    count = f"{len(read.rows)} tool call{'s' if len(read.rows) != 1 else ''} in this chat"
    damaged = f"; {read.damaged} damaged lines of the audit skipped" if read.damaged else ""
    return f"{count}, newest last (from {path}{damaged})."


def _kind(path: str, chosen: str) -> Format:
    """The name's suffix when it is one of the kinds, else the kind picked in the dialog."""
    suffix = Path(path).suffix.lstrip(".").lower()
    named = [fmt for fmt in KINDS if fmt == suffix]
    picked = [fmt for fmt, listed in KINDS.items() if listed == chosen]
    return (named or picked or ["jsonl"])[0]


def show_tool_calls(parent: QWidget, controller: ChatController) -> ToolCallsDialog:
    """Open the view of the open chat's calls (the one already open is raised and re-read)."""
    dialog = parent.findChild(ToolCallsDialog)
    if dialog is None:
        dialog = ToolCallsDialog(controller, parent)
    else:
        dialog.reload()
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
    return dialog


__all__ = ["ToolCallsDialog", "show_tool_calls"]
