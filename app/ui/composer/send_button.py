"""The composer's one button and the box's hint, for the three states a chat can be in.

Guarantees: idle, the button is Send (the primary colour, a send icon); while the open chat's
own answer streams it is Stop (the stop colour, a stop icon), and the box's hint says that
Enter queues the next message and Esc stops; while another chat's answer streams it is Queue
(the primary colour, a clock icon), naming that chat in its tooltip and in the hint — it never
shows or acts on the other chat's Stop. Text, icon, colour and accessible name change together.
"""

from __future__ import annotations

from PySide6.QtWidgets import QPlainTextEdit, QPushButton

from app.ui.icons import give
from app.ui.theme import mark

PLACEHOLDER = "Message (Enter sends, Shift+Enter new line, Esc stops; @ attaches a document)"
STREAMING = "Enter queues your next message (sent when this answer ends); Esc stops the answer"


def show_state(button: QPushButton, box: QPlainTextEdit, busy: bool, where: str) -> None:
    """Send (not `busy`), Stop (`busy` here: `where` empty) or Queue (`busy` in chat `where`)."""
    if busy and not where:
        text, icon, role, name = "Stop", "stop-circle", "stop", "Stop the answer"
        tip, hint = "Stop the answer (Esc)", STREAMING
    elif busy:
        text, icon, role, name = "Queue", "send-clock-outline", "primary", "Queue the message"
        tip = f"Queue the message: it is sent when the answer in “{where}” ends (Enter)"
        hint = f"Enter queues the message: it is sent when the answer in “{where}” ends"
    else:
        text, icon, role, name = "Send", "send", "primary", "Send the message"
        tip, hint = "Send the message (Enter)", PLACEHOLDER
    button.setText(text)
    give(button, icon)
    mark(button, role)
    button.setAccessibleName(name)
    button.setToolTip(tip)
    box.setPlaceholderText(hint)


__all__ = ["PLACEHOLDER", "STREAMING", "show_state"]
