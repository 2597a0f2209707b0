"""What the composer's "@" and "/" offer, and what becomes of a pick.

Guarantees: "@" offers the library's documents and the MCP servers' resources that match what
follows it, a "/" that starts the message the servers' prompts (`mention_picker.py` shows them);
the composer asks for each list afresh when a mention or a command starts, and while the
documents or the prompts are not known yet (`mentionRequested`, `commandRequested`); a list that
arrives later is shown at once if the user is still typing there. A picked entry takes its "@…"
or "/…" out of the box: a document is attached, a resource or a prompt is said (`offerChosen`)
for the composer's MCP side (`mcp_offers.py`) to read or run. The composer hands each of the
three signals on as its own. One picker serves both: a
mention's keystrokes never close a command's list, nor the reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from app.controllers.mcp_context import Offer, Section
    from app.ui.composer.mention_picker import MentionPicker
    from app.ui.composer.message_box import MessageBox


class Mentions(QObject):
    """The composer's "@" and "/" (see the module guarantees): what is typed in `box`, offered
    in `picker`; a picked document goes to `attach`."""

    mentionRequested = Signal()  # a mention started: the documents (and resources) are wanted
    commandRequested = Signal()  # a "/" starts the message: the MCP servers' prompts are wanted
    offerChosen = Signal(object)  # an MCP `Offer` picked (its "@…" or "/…" taken out of the box)

    def __init__(
        self,
        box: MessageBox,
        picker: MentionPicker,
        attach: Callable[[list[Path]], None],
        parent: QObject,
    ) -> None:
        super().__init__(parent)
        self.box, self.picker, self.attach = box, picker, attach
        self.documents: list[Path] | None = None  # the library's, once read (None: not yet)
        self.resources: list[Section] = []  # the MCP servers' (asked as each mention starts)
        self.prompts: list[Section] | None = None  # (None: not yet)
        self.box.mentionChanged.connect(self._mention)
        self.box.commandChanged.connect(self._command)
        self.picker.picked.connect(self._mentioned)
        self.picker.offered.connect(self._offered)

    def set_documents(self, documents: list[Path]) -> None:
        """The library's documents (read off the GUI thread)."""
        self.documents = documents
        self._show_mention(self.box.mention())

    def set_resources(self, sections: list[Section]) -> None:
        """The MCP servers' resources (listed off the GUI thread), offered beside documents."""
        self.resources = sections
        self._show_mention(self.box.mention())

    def set_prompts(self, sections: list[Section]) -> None:
        """The MCP servers' prompts (listed off the GUI thread), offered after a "/"."""
        self.prompts = sections
        self._show_command(self.box.command())

    def _mention(self, typed: str | None) -> None:
        """The box's mention changed: the lists asked for as one starts, then shown."""
        if typed == "" or (typed is not None and self.documents is None):
            self.mentionRequested.emit()  # a mention starts: the lists read afresh
        self._show_mention(typed)

    def _show_mention(self, typed: str | None) -> None:
        if typed is None and (not self.picker.isVisible() or self.picker.enter_picks):
            return  # not in a mention (most keystrokes), or the picker shows a command
        self.picker.show_for(self.documents or [], typed, self.resources)

    def _command(self, typed: str | None) -> None:
        if typed == "" or (typed is not None and self.prompts is None):
            self.commandRequested.emit()
        self._show_command(typed)

    def _show_command(self, typed: str | None) -> None:
        if typed is None and (not self.picker.isVisible() or not self.picker.enter_picks):
            return  # not in a command, or the picker shows a mention
        self.picker.show_commands(self.prompts or [], typed)

    def _taken(self, typed: str | None) -> None:
        """The "@…" or "/…" the cursor is in goes out of the box."""
        cursor = self.box.textCursor()
        for _ in range(len(typed) + 1 if typed is not None else 0):
            cursor.deletePreviousChar()

    def _mentioned(self, path: Path) -> None:
        """The picked document is attached."""
        self._taken(self.box.mention())
        self.attach([path])

    def _offered(self, offer: Offer) -> None:
        """A picked resource or prompt, said to the composer's MCP side."""
        self._taken(self.box.mention() if offer.kind == "resource" else self.box.command())
        self.offerChosen.emit(offer)


__all__ = ["Mentions"]
