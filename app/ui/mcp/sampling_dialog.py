"""The approval of an MCP server's sampling request: what the server wants the conversation's
model to read and how much it may write, and the person's choice.

Guarantees: the dialog shows the server, the conversation, the system prompt, every message
of the request with its role, and the token limit (the host's cap beside what the server
asked); its choices are those of a tool call — Allow (this once), Allow in this chat, Always
allow, Deny — and closing it (Esc, the close button) denies; it answers once, and a request
withdrawn at its deadline closes it answering nothing. It opens within its screen: the system
prompt and the messages shrink and scroll, the buttons stay on the screen. Everything the
server wrote is shown inert and as plain text (`app/ui/mcp/plain.py`): no markup is rendered,
no control or bidi character acts, a long text is cut with how much more there was.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.mcp_asks import Choice, SamplingAsk
from app.domain.inert import inert
from app.ui.mcp.plain import plain_label
from app.ui.window.screen_fit import fit_dialog

SHOWN_CHARS = 8000  # of the system prompt, or of the messages together


def _text(text: str, name: str, lines: int) -> QPlainTextEdit:
    box = QPlainTextEdit(inert(text, SHOWN_CHARS, lines=True))
    box.setObjectName(name)
    box.setReadOnly(True)
    box.setMaximumHeight(box.fontMetrics().lineSpacing() * lines + 12)
    return box


def transcript(ask: SamplingAsk) -> str:
    """The request's messages as the person reads them."""
    return "\n\n".join(f"{inert(role.capitalize())}: {text}" for role, text in ask.messages)


class SamplingDialog(QDialog):
    """See the module guarantees."""

    def __init__(
        self, ask: SamplingAsk, answer: Callable[[Choice], None], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.ask = ask
        self._answer: Callable[[Choice], None] | None = answer
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(520)
        self.setWindowTitle(f"{inert(ask.server, 80)} asks the model")
        layout = QVBoxLayout(self)
        where = f" in “{ask.conversation}”" if ask.conversation else ""
        said = plain_label(
            f"The MCP server “{ask.server}” asks the conversation's model{where} to answer"
            " this. What the model writes goes to the server.",
            "asker",
        )
        layout.addWidget(said)
        if ask.system_prompt:
            layout.addWidget(QLabel("System prompt:"))
            layout.addWidget(_text(ask.system_prompt, "system_prompt", 4))
        layout.addWidget(QLabel("Messages:"))
        layout.addWidget(_text(transcript(ask), "messages", 10))
        limit = f"The model may write at most {ask.max_tokens:,} tokens"
        if ask.asked_tokens > ask.max_tokens:
            limit += f" (the server asked for {ask.asked_tokens:,})"
        self.limit = QLabel(limit + ".")
        self.limit.setObjectName("limit")
        layout.addWidget(self.limit)
        self.buttons: dict[Choice, QPushButton] = {}
        row = QHBoxLayout()
        row.addStretch(1)
        shown: tuple[tuple[Choice, str], ...] = (
            ("deny", "Deny"),
            ("always", "Always allow"),
            ("chat", "Allow in this chat"),
            ("once", "Allow"),
        )
        for choice, text in shown:
            button = self.buttons[choice] = QPushButton(text)
            button.clicked.connect(lambda _=False, c=choice: self.choose(c))
            row.addWidget(button)
        self.buttons["once"].setDefault(True)
        layout.addLayout(row)
        fit_dialog(self)  # within the screen: the texts shrink and scroll, the buttons stay

    def choose(self, choice: Choice) -> None:
        answer, self._answer = self._answer, None
        if answer is not None:
            answer(choice)
        allowed = choice != "deny"
        self.done(QDialog.DialogCode.Accepted if allowed else QDialog.DialogCode.Rejected)

    def reject(self) -> None:  # Esc, the close button
        self.choose("deny")

    def withdraw(self) -> None:
        self._answer = None
        self.done(QDialog.DialogCode.Rejected)


__all__ = ["SamplingDialog", "transcript"]
