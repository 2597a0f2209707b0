"""The ways on from a message the context cannot hold, wired to the window (`fit_bar.py` shows
them).

Guarantees: "Raise the context" reloads the open model with the size offered and says so in
the status bar; the composer's count is taken again whenever what it was measured against
changed — a model loaded (after a raise: the count is the loaded context's, never the old
one's), an answer ended, a compaction made or undone, another chat shown — so Enter after a
raise sends a message that now fits; "Compact now" compacts the open chat (offered enabled
only when `Compactions.refused` has nothing against it, its reason shown otherwise); "Move to
a new chat" opens a new, empty chat with the message (and its attachments) still in the box,
counted there.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar

    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.ui.composer.composer import Composer


class Window(Protocol):
    """What the ways on need of the main window (passed in: never imported here)."""

    controller: ChatController
    composer: Composer
    host: ModelHost

    def statusBar(self) -> QStatusBar: ...

    def load_model(
        self, path: str | None = None, *, n_ctx: int | None = None, threads: int | None = None
    ) -> asyncio.Task[Any]: ...


RAISING = (
    "Reloading the model with a {size:,}-token context; press Enter to send once it has loaded."
)


class ContextWays:
    """See the module guarantees."""

    def __init__(self, window: Window) -> None:
        self.window = window
        chat, composer = window.controller, window.composer
        offer, count = composer.offer, composer.count
        offer.compact_refused = chat.compactions.refused
        offer.chat_empty = lambda: not chat.doc.turns
        composer.raiseContext.connect(self.raise_context)
        offer.compactChosen.connect(chat.compactions.compact_now)
        offer.newChatChosen.connect(self.new_chat)
        window.host.loaded.connect(lambda _name: count.recount())
        chat.replyFinished.connect(lambda _turn: count.recount())
        chat.compactions.changed.connect(count.recount)  # (also: another chat shown)

    def raise_context(self, size: int) -> None:
        """Reload the open model with `size` tokens of context (the count follows the load)."""
        window = self.window
        window.statusBar().showMessage(RAISING.format(size=size), 15_000)
        window.load_model(window.host.path or None, n_ctx=size)

    def new_chat(self) -> None:
        """A new, empty chat, the message kept in the box to send there."""
        box = self.window.composer.box
        text = box.toPlainText()
        self.window.controller.new_chat()
        box.setPlainText(text)  # (a chat's own draft, restored on the switch, gives way)
        box.moveCursor(box.textCursor().MoveOperation.End)
        box.setFocus()


__all__ = ["ContextWays"]
