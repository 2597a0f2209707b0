"""The window's compaction controls: the status bar's "compacted" and Compact now, and the
composer's `/compact`.

Guarantees: the status bar says the open chat's latest compaction whenever it may have changed
(another chat shown, a turn ended, compacted now, undone: `Compactions.changed`), and Compact
now is enabled only when the chat can be compacted now (its tooltip says why not otherwise);
`/compact` typed alone in the composer compacts at once, as the button does, and
`/compact undo` undoes the latest compaction; either is taken out of the box once asked, and
is never sent to the model. The overflow menu follows the chat's policy when a compaction sets
it. Everything goes through the chat controller's `compactions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.controllers.chat import ChatController
    from app.ui.composer.overflow_menu import OverflowMenu
    from app.ui.window.status_line import StatusLine

COMMAND = "/compact"
UNDO = f"{COMMAND} undo"
OFFER = "Compact now: summarise the older exchanges at once (/compact); every message stays"


class CompactionControls:
    """See the module guarantees."""

    def __init__(self, status: StatusLine, chat: ChatController, menu: OverflowMenu) -> None:
        self.status, self.chat = status, chat
        compactions = chat.compactions
        status.compact.clicked.connect(compactions.compact_now)
        compactions.changed.connect(self.update)
        compactions.changed.connect(menu.sync)
        chat.busyChanged.connect(lambda _busy: self.update())
        chat.host.stateChanged.connect(lambda _state: self.update())
        self.update()

    def update(self) -> None:
        """Say the open chat's latest compaction; offer Compact now when it can run."""
        compactions = self.chat.compactions
        self.status.show_compaction(compactions.latest())
        why = compactions.refused()
        self.status.compact.setEnabled(not why)
        self.status.compact.setToolTip(f"{OFFER}. {why}" if why else OFFER)

    def command(self, text: str) -> bool:
        """Run `/compact` or `/compact undo` typed alone; False when `text` is neither (it is
        a message). True when it was one and was taken (the box may be cleared)."""
        typed = " ".join(text.split())
        if typed == COMMAND:
            self.chat.compactions.compact_now()
            return True
        if typed == UNDO:
            self.chat.compactions.undo_latest()
            return True
        return False


__all__ = ["COMMAND", "UNDO", "CompactionControls"]
