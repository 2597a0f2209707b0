"""The composer's MCP side: the conversation's servers' resources after "@" and prompts after
"/", a picked resource attached and a picked prompt run into the message box.

Guarantees: the lists, a read and a run go to the servers off the GUI thread
(`app/controllers/mcp_context.py` bounds each); the resources are listed as each "@" starts,
the prompts as each "/" starts, for the servers the conversation's Tools enable at that moment
(none enabled: nothing is listed, no server started); a resource's text is attached as a file
whose chip says its size, its images go to the image tray (checked there like any image);
a prompt with arguments first asks for them (`prompt_form.py`: Cancel runs nothing), then its
text goes into the box where the "/…" was, for the user to edit before sending; what was
refused, and a read or run that failed, is said above the field in one sentence (the note
the images use), and "Reading …" / "Running …" is said there meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QWidget

from app.controllers.mcp_context import Attachment, Filled, McpContext, Offer, safely, servers
from app.ui.composer.prompt_form import PromptForm

if TYPE_CHECKING:
    from app.controllers.background import Background
    from app.domain.history import ChatDoc
    from app.ui.composer.image_chips import ImageTray
    from app.ui.composer.mentions import Mentions


class McpOffers(QObject):
    """See the module guarantees. It answers the composer's `mentions` (their requests and
    picks; the lists go back to them, a prompt's text into their box), adds images to the
    `tray` and files through `attach`; `composer` is its parent, whose window a prompt's form
    opens on."""

    def __init__(
        self,
        mentions: Mentions,
        tray: ImageTray,
        attach: Callable[[list[Path], dict[Path, str]], None],
        context: McpContext,
        doc: Callable[[], ChatDoc],
        jobs: Background,
        composer: QWidget,
    ) -> None:
        super().__init__(composer)
        self.composer, self.mentions, self.box = composer, mentions, mentions.box
        self.tray, self.attach = tray, attach
        self.context, self.doc, self.jobs = context, doc, jobs
        self.form: PromptForm | None = None  # a prompt's arguments, while asked
        mentions.mentionRequested.connect(self.list_resources)
        mentions.commandRequested.connect(self.list_prompts)
        mentions.offerChosen.connect(self.choose)

    def detach(self) -> None:
        """Offer nothing more (another context replaces this one)."""
        self.mentions.mentionRequested.disconnect(self.list_resources)
        self.mentions.commandRequested.disconnect(self.list_prompts)
        self.mentions.offerChosen.disconnect(self.choose)
        self.deleteLater()

    def _servers(self) -> tuple[tuple[str, ...], bool]:
        doc = self.doc()
        return servers(doc), doc.offline

    def list_resources(self) -> None:
        names, offline = self._servers()
        mentions = self.mentions
        if names:
            self.jobs.run(lambda: self.context.resources(names, offline), mentions.set_resources)
        elif mentions.resources:
            mentions.set_resources([])

    def list_prompts(self) -> None:
        names, offline = self._servers()
        mentions = self.mentions
        if names:
            self.jobs.run(lambda: self.context.prompts(names, offline), mentions.set_prompts)
        elif mentions.prompts != []:
            mentions.set_prompts([])

    def choose(self, offer: Offer) -> None:
        """A picked resource is read and attached; a picked prompt is run (its arguments
        asked first)."""
        if offer.kind == "resource":
            self._say(f"Reading “{offer.name}” from {offer.server}…")
            self.jobs.run(safely(lambda: self.context.read(offer)), self._attach)
        elif offer.arguments:
            self.form = PromptForm(offer, self.composer.window())
            self.form.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            self.form.chosen.connect(lambda values: self._run(offer, values))
            self.form.open()
        else:
            self._run(offer, {})

    def _run(self, offer: Offer, arguments: dict[str, str]) -> None:
        self._say(f"Running the prompt “{offer.name}” of {offer.server}…")
        self.jobs.run(safely(lambda: self.context.prompt(offer, arguments)), self._fill)

    def _attach(self, read: Attachment | str) -> None:
        if isinstance(read, str):
            self._say(read, problem=True)
            return
        self._say(read.refused, problem=bool(read.refused))
        if read.file is not None:
            self.attach([read.file], {read.file: read.size_said})
        for data, name in read.images:
            self.tray.add(data, name)
        self.box.setFocus()

    def _fill(self, filled: Filled | str) -> None:
        if isinstance(filled, str):
            self._say(filled, problem=True)
            return
        self._say(filled.refused, problem=bool(filled.refused))
        self.box.insertPlainText(filled.text)
        for data, name in filled.images:
            self.tray.add(data, name)
        self.box.setFocus()

    def _say(self, text: str, problem: bool = False) -> None:
        self.tray.say(text, problem)


__all__ = ["McpOffers"]
