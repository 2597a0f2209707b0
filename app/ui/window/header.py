"""The window's one header row, above the conversation: compact, never more than one line.

Guarantees: from left to right, the conversation list's toggle, the model that answers (a
picker of the recent ones and a file), the load's progress and its Cancel (shown only while a
model loads), which endpoint answers (only with remote endpoints), the conversation's
instructions (folded: `instructions_fold.py`) and Open model…; each control is named for
assistive technology, and they are built in this order, which is the keyboard's tab order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QWidget,
)

from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost
from app.ui.icons import give
from app.ui.models.picker import ModelPicker
from app.ui.window.endpoints import EndpointPicker

PICKER_MAX_PX = 360  # the model's name, not the row's whole width
PROGRESS_PX = 140


class Header(QWidget):
    """See the module guarantees."""

    def __init__(
        self,
        controller: ChatController,
        host: ModelHost,
        load: Callable[..., Any],
        open_file: Callable[[], Any],
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("header")
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 4, 8, 4)
        row.setSpacing(6)
        self.sidebar_button = QToolButton(self)
        give(self.sidebar_button, "dock-left")
        self.sidebar_button.setText("Conversations")
        self.sidebar_button.setAutoRaise(True)
        self.sidebar_button.setAccessibleName("Show or hide the conversations")
        self.picker = ModelPicker(host, load, open_file, self)
        self.picker.setMaximumWidth(PICKER_MAX_PX)
        self.picker.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.progress = QProgressBar(self)
        self.progress.setAccessibleName("Model load progress")
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(PROGRESS_PX)
        self.progress.hide()
        self.cancel_load = QPushButton("Cancel", self)
        self.cancel_load.setAccessibleName("Cancel loading the model")
        self.cancel_load.hide()
        for w in (self.sidebar_button, self.picker, self.progress, self.cancel_load):
            row.addWidget(w)
        self.endpoint: EndpointPicker | None = None
        if controller.remote is not None:
            self.endpoint = EndpointPicker(controller, controller.remote, self)
            row.addWidget(QLabel("Answered by:", self))
            row.addWidget(self.endpoint)
        row.addStretch(1)
        self.instructions_button = QToolButton(self)  # `InstructionsFold` says what it does
        self.open_model = QPushButton("Open model…", self)
        give(self.open_model, "folder-open")
        self.open_model.setAccessibleName("Open a GGUF model file")
        row.addWidget(self.instructions_button)
        row.addWidget(self.open_model)


__all__ = ["Header"]
