"""What holds a chat that has no message yet, so that switching away does not drop it.

Guarantees: `keep_started` tells the conversations controller (`ConversationsController.keeps`)
that a chat with no message is still the user's while the window holds something of it: a
message queued for it (`SendQueue.of`), or — for the open chat, at the moment the user switches
away — text in the message box (its draft) or files or images waiting to be sent with it. Only
a chat with none of these (and, as the controller checks, no instructions, its first title, not
pinned) is dropped.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from app.controllers.chat import ChatController
from app.domain.history import ChatDoc


def keep_started(chats: ChatController, inside: QWidget) -> None:
    """Register what holds an empty chat; the composer is that of the window `inside` is in,
    found when asked (the window builds it after the sidebar)."""

    def held(doc: ChatDoc) -> bool:
        if chats.queue.of(doc.id):
            return True
        return doc is chats.doc and _composing(inside.window())

    chats.keeps.append(held)


def _composing(window: QWidget) -> bool:
    """Whether the window's message box holds a draft, or files or images wait to be sent."""
    from app.ui.composer.composer import Composer

    composer = window.findChild(Composer)
    if composer is None:
        return False
    waiting = bool(composer.files) or bool(composer.images)
    return waiting or bool(composer.box.toPlainText().strip())


__all__ = ["keep_started"]
