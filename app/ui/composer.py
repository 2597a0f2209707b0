"""The composer: the message box and the options that apply to the next message.

Guarantees: Enter sends, Shift+Enter adds a line, Esc stops; the reasoning effort chosen here is
recorded on the message it is sent with; JSON mode sends only with a schema that is valid and
enforceable, and the schema editor says what is wrong as you type; every control has an
accessible name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QAction, QDragEnterEvent, QDragMoveEvent, QDropEvent, QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.attachments import pasted_files
from app.controllers.chat import SchemaError, check_schema
from app.ui.icons import give
from app.ui.markdown_view import monospace

DEFAULT_SCHEMA = (
    '{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}'
)


class MessageBox(QPlainTextEdit):
    """Enter sends, Shift+Enter adds a line, Esc stops; Tab moves on to Send (keyboard users
    are never trapped in the box)."""

    submitted = Signal()
    stopRequested = Signal()
    filesDropped = Signal(list)  # local files dropped on the box: attached, not pasted as paths
    mentionRequested = Signal()  # "@" typed: pick a document from the library

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)

    def _files(self, mime: QMimeData) -> list[Path]:
        return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if self._files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if self._files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        files = self._files(event.mimeData())
        if files:
            self.filesDropped.emit(files)
            event.acceptProposedAction()
        else:
            super().dropEvent(event)

    def insertFromMimeData(self, source: QMimeData) -> None:
        """A pasted file (copied in a file manager, or its path alone) is attached, not typed."""
        urls = [str(p) for p in self._files(source)]
        files = pasted_files(urls, source.text() if source.hasText() else "")
        if files:
            self.filesDropped.emit(files)
        else:
            super().insertFromMimeData(source)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.stopRequested.emit()
            return
        super().keyPressEvent(event)
        if event.text() == "@":
            self.mentionRequested.emit()


class Composer(QWidget):
    """Message box, send/stop, reasoning effort, JSON mode with its schema editor, and the
    files the next message carries (Attach…, dropped on the box, or picked from the library
    after typing "@")."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        # built in this order: the widgets' creation order is the keyboard's tab order
        layout.addLayout(self._build_options())
        self._build_schema(layout)
        layout.addLayout(self._build_message_row())
        self.files: list[Path] = []  # what the next message carries
        layout.addLayout(self._build_attachments())
        self.attach.clicked.connect(self._choose_files)
        self.detach.clicked.connect(lambda: self.take_files())
        self.box.filesDropped.connect(self.add_files)
        self.json_mode.toggled.connect(self._json_toggled)
        self.schema.textChanged.connect(self.check_schema)
        self.check_schema()

    def _build_options(self) -> QHBoxLayout:
        """Reasoning effort, JSON mode, Tools… and Offline."""
        options = QHBoxLayout()
        self.effort = QComboBox(self)
        self.effort.addItems(["default effort", "low", "medium", "high"])
        self.effort.setAccessibleName("Reasoning effort for the next message")
        self.json_mode = QCheckBox("JSON mode", self)
        self.json_mode.setAccessibleName("Answer in JSON matching the schema")
        self.offline = QCheckBox("Offline", self)
        self.offline.setAccessibleName("Keep this conversation off the network")
        self.tools_button = QPushButton("Tools…", self)
        give(self.tools_button, "tools")
        self.tools_button.setAccessibleName("Choose the tools of this conversation")
        self.effort_label = QLabel("Reasoning:", self)
        options.addWidget(self.effort_label)
        options.addWidget(self.effort)
        options.addWidget(self.json_mode)
        options.addWidget(self.tools_button)
        options.addWidget(self.offline)
        options.addStretch(1)
        return options

    def _build_schema(self, layout: QVBoxLayout) -> None:
        """The JSON schema editor and its check (shown in JSON mode only)."""
        self.schema = QPlainTextEdit(self)
        self.schema.setFont(monospace())
        self.schema.setPlainText(DEFAULT_SCHEMA)
        self.schema.setAccessibleName("JSON schema")
        self.schema.setMaximumHeight(90)
        self.schema_state = QLabel(self)
        self.schema_state.setAccessibleName("Schema check")
        self.schema.hide()
        self.schema_state.hide()
        layout.addWidget(self.schema)
        layout.addWidget(self.schema_state)

    def _build_message_row(self) -> QHBoxLayout:
        """The message box, Send and Stop."""
        row = QHBoxLayout()
        self.box = MessageBox(self)
        self.box.setPlaceholderText("Message (Enter sends, Shift+Enter new line, Esc stops)")
        self.box.setAccessibleName("Message")
        self.box.setMaximumHeight(110)
        self.send = QPushButton("Send", self)
        give(self.send, "send")
        self.send.setProperty("role", "primary")
        self.send.setAccessibleName("Send the message")
        self.stop = QPushButton("Stop", self)
        give(self.stop, "stop")
        self.stop.setAccessibleName("Stop the answer")
        self.stop.setEnabled(False)
        row.addWidget(self.box, 1)
        row.addWidget(self.send)
        row.addWidget(self.stop)
        return row

    def _build_attachments(self) -> QHBoxLayout:
        """Attach…, the Library switch, the attached files and Remove files."""
        attached = QHBoxLayout()
        self.attach = QPushButton("Attach…", self)
        self.attach.setAccessibleName("Attach files to the message")
        self.attach.setToolTip("Text, Markdown, code, HTML, PDF or Word files (or drop them here)")
        self.attachments = QLabel("", self)
        self.attachments.setAccessibleName("Attached files")
        self.attachments.setWordWrap(True)
        self.library = QCheckBox("Library", self)
        self.library.setAccessibleName("Use the documents library in this conversation")
        self.library.setToolTip(
            "Each message also carries the most relevant passages of your documents library"
            " (harmony-desk documents add FOLDER); the answer cites them as [n]"
        )
        self.detach = QPushButton("Remove files", self)
        self.detach.setAccessibleName("Remove the attached files")
        self.detach.hide()
        attached.addWidget(self.attach)
        attached.addWidget(self.library)
        attached.addWidget(self.attachments, 1)
        attached.addWidget(self.detach)
        return attached

    def _json_toggled(self, on: bool) -> None:
        self.schema.setVisible(on)
        self.schema_state.setVisible(on)
        self.check_schema()

    def check_schema(self) -> dict[str, Any] | None:
        """The schema when it is valid and enforceable; None (and a reason shown) otherwise."""
        try:
            schema = json.loads(self.schema.toPlainText())
            if not isinstance(schema, dict):
                raise SchemaError("the schema must be a JSON object")
            found = check_schema(schema)
        except ValueError as exc:
            self.schema_state.setText(f"✗ not JSON: {exc}")
            return None
        except SchemaError as exc:
            self.schema_state.setText(f"✗ {exc.message}")
            return None
        after = "" if found.full else f"; {found.summary()}"
        self.schema_state.setText(f"✓ schema is valid{after}")
        return schema

    def effort_value(self) -> str | None:
        text = self.effort.currentText()
        return None if text.startswith("default") else text

    def _choose_files(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Attach files")
        self.add_files([Path(n) for n in names])

    def add_files(self, files: list[Path]) -> None:
        """Files the next message carries (each once)."""
        self.files += [f for f in files if f not in self.files]
        self.attachments.setText("  ".join(f"📎 {f.name}" for f in self.files))
        self.detach.setVisible(bool(self.files))

    def take_files(self) -> list[Path]:
        """The attached files, which the composer then forgets."""
        files, self.files = self.files, []
        self.add_files([])
        return files

    def offer_documents(self, documents: list[Path]) -> QMenu:
        """After "@": the library's documents; the one chosen is attached (the "@" goes)."""
        menu = QMenu(self)
        for path in documents[:40]:
            menu.addAction(path.name).setData(str(path))
        if not documents:
            menu.addAction("No documents yet: harmony-desk documents add PATH").setEnabled(False)
        menu.triggered.connect(self._mentioned)
        at = self.box.mapToGlobal(self.box.cursorRect().bottomLeft())
        menu.popup(at)
        return menu

    def _mentioned(self, action: QAction) -> None:
        if not action.data():
            return
        cursor = self.box.textCursor()
        cursor.movePosition(cursor.MoveOperation.Left, cursor.MoveMode.KeepAnchor)
        if cursor.selectedText() == "@":
            cursor.removeSelectedText()
        self.add_files([Path(str(action.data()))])

    def set_features(self, tools: bool, effort: bool) -> None:
        """Offer tools and a reasoning effort only for a model that has them."""
        self.effort_label.setVisible(effort)
        self.effort.setVisible(effort)
        if not effort:
            self.effort.setCurrentIndex(0)
        self.tools_button.setEnabled(tools)
        self.tools_button.setToolTip(
            "" if tools else "This model's chat template has no tool-call format"
        )

    def set_busy(self, busy: bool) -> None:
        self.send.setEnabled(not busy)
        self.stop.setEnabled(busy)


__all__ = ["Composer", "MessageBox"]
