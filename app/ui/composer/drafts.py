"""Drafts kept per chat: what is typed in one chat's message box stays with that chat.

Guarantees: when the open chat changes (another is selected, a new one started, the open one
deleted), the text in the message box is kept for the chat it was typed in and the box shows
what was left in the chat now open (empty if nothing); an edit, a flip between versions or a
reply that repaints the same chat never touches the box; a draft that is only blank is not kept;
drafts live as long as the window (in memory only, never written anywhere).
"""

from __future__ import annotations

from PySide6.QtWidgets import QPlainTextEdit

from app.controllers.conversations import ConversationsController


class Drafts:
    """See the module guarantees."""

    def __init__(self, box: QPlainTextEdit, chats: ConversationsController) -> None:
        self.box, self.chats = box, chats
        self.kept: dict[str, str] = {}  # chat id → its draft
        self.shown = chats.doc.id
        chats.docChanged.connect(self._switched)

    def _switched(self) -> None:
        now = self.chats.doc.id
        if now == self.shown:
            return
        text = self.box.toPlainText()
        if text.strip():
            self.kept[self.shown] = text
        else:
            self.kept.pop(self.shown, None)
        self.shown = now
        self.box.setPlainText(self.kept.pop(now, ""))
        self.box.moveCursor(self.box.textCursor().MoveOperation.End)


__all__ = ["Drafts"]
