"""The composer: the message box and the options that apply to the next message, inside one
rounded field (`field.py`).

Guarantees: Enter sends, Shift+Enter adds a line, Esc stops (`message_box.py`); one button
in one place sends, and while this chat's answer streams it is a Stop button drawn differently
(its own colour, icon and text) — Stop and Esc act on this chat's answer only; while an answer
streams (this chat's or another's) Enter queues the message and the button says Queue in a
chat that is not the one answering (`send_button.py`); an empty box's Enter never stops
anything; the open chat's queued messages show right above the field (`queue_panel.py`) and a draft
stays with the chat it was typed in (`drafts.py`); the
box grows with its text (2 to 8 lines, then scrolls); only what
applies to the loaded model is offered (the reasoning effort for a model that takes one; Tools
disabled, saying why, for a model that cannot call tools) and Tools says how many tools are
on; the reasoning effort chosen here is recorded on the message it is sent with; JSON mode
sends only with a schema that is valid and enforceable, the schema editor (above the field)
says what is wrong as you type, and nothing of JSON mode is loaded until it is turned on; "@"
offers the library's documents that match what follows it, and the enabled MCP servers'
resources once `use_mcp` is called, and a "/" starting the message their prompts
(`mention_picker.py`, right above the field; `mcp_offers.py`); the attached files show as
chips, each removable, a resource's with its size (`file_chips.py`); the message's
size is shown against the room left, and a message that cannot fit offers its three ways on
(`fit_bar.py`); every control has an accessible name.

Images (Attach, dropped, or pasted: a screenshot) are checked before one is taken, and a bad
one is said above the field, the typed text, other images and files staying (`image_chips.py`,
`ImageTray`); for a model that reads text only the image stays and Send refuses to send it,
saying why, until it is removed or a model that sees images answers the chat; Send while an
image is being checked sends once it is taken (not if it was refused: the user reads why).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from app.controllers.fit import Fit
from app.ui.composer.drafts import Drafts
from app.ui.composer.field import ComposerField
from app.ui.composer.fit_bar import FitOffer
from app.ui.composer.image_chips import ImageTray
from app.ui.composer.mention_picker import MentionPicker
from app.ui.composer.mentions import Mentions
from app.ui.composer.message_box import MessageBox
from app.ui.composer.queue_panel import QueuePanel
from app.ui.composer.send_button import PLACEHOLDER, show_state
from app.ui.markdown.view import monospace
from app.ui.start_folder import open_files
from app.ui.theme import mark

if TYPE_CHECKING:
    from app.controllers.attachments import Picture
    from app.controllers.background import Background
    from app.controllers.chat import ChatController
    from app.controllers.mcp_context import McpContext
    from app.domain.history import ChatDoc
    from app.ui.composer.mcp_offers import McpOffers

DEFAULT_SCHEMA = (
    '{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}'
)


async def _no_count(text: str) -> Fit:
    from app.domain.attachments import ESTIMATED_CONTEXT, estimate

    return Fit(estimate(text), ESTIMATED_CONTEXT, ESTIMATED_CONTEXT, 0, estimated=True)


class Composer(QWidget):
    """Message box, send/stop, reasoning effort, JSON mode with its schema editor, the files
    the next message carries (Attach, dropped on the box, or picked from the library after
    typing "@"), and the message's size."""

    submitted = Signal()  # Send (or Enter) while no answer streams
    stopRequested = Signal()  # Stop (or Esc) while one does
    mentionRequested = Signal()  # a mention started: the documents (and resources) are wanted
    commandRequested = Signal()  # a "/" starts the message: the MCP servers' prompts are wanted
    offerChosen = Signal(object)  # an MCP `Offer` picked (its "@…" or "/…" taken out of the box)
    raiseContext = Signal(int)  # the user chose to reload the model with this context

    def __init__(
        self,
        parent: QWidget | None = None,
        measure: Callable[[str], Awaitable[Fit]] = _no_count,
    ) -> None:
        super().__init__(parent)
        self.busy = False
        self.file_notes: dict[Path, str] = {}  # said on a file's chip (a resource's size)
        self._pasted = ""  # a large paste that did not fit, while its offer shows
        self.files: list[Path] = []  # what the next message carries
        self._send_when_checked = False  # Send was pressed while an image was being checked
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        self._build_schema(layout)
        self.image_note = QLabel(self)  # what became of the last image added (a problem)
        self.image_note.setAccessibleName("Image note")
        self.image_note.setWordWrap(True)
        self.image_note.hide()
        layout.addWidget(self.image_note)
        self.offer = FitOffer(self)
        layout.addWidget(self.offer)
        self.picker = MentionPicker(self)
        layout.addWidget(self.picker)
        self.queued = QueuePanel(self)  # the open chat's queued messages (`bind`: the chat)
        layout.addWidget(self.queued)
        self.field = field = ComposerField(measure, self)
        layout.addWidget(field)
        self.box: MessageBox = field.box
        self.box.picker = self.picker
        self.box.setPlaceholderText(PLACEHOLDER)
        self.send, self.count, self.attach = field.send, field.count, field.attach
        self.tools_button, self.json_mode = field.tools_button, field.json_mode
        self.effort, self.effort_label = field.effort, field.effort_label
        self.offline, self.library = field.offline, field.library
        self.attachments, self.detach = field.chips, field.chips.detach
        self.image_chips = field.images
        self.tray = ImageTray(field.images, self.image_note)  # the images it carries
        self.mentions = Mentions(self.box, self.picker, self.add_files, self)  # "@" and "/"
        self.mcp: McpOffers | None = None  # the MCP servers' side of "@" and "/" (`use_mcp`)
        field.order_tabs()
        self.set_busy(False)
        self.set_features(tools=True, effort=False)
        self._connect()

    def _connect(self) -> None:
        box, mentions = self.box, self.mentions  # its requests and picks are the composer's
        mentions.mentionRequested.connect(self.mentionRequested)
        mentions.commandRequested.connect(self.commandRequested)
        mentions.offerChosen.connect(self.offerChosen)
        self.attach.clicked.connect(self._choose_files)
        self.detach.clicked.connect(lambda: self.take_files())
        self.attachments.removed.connect(self._remove_file)
        box.filesDropped.connect(self.add_files)
        box.imagePasted.connect(self.tray.add)
        self.image_chips.removed.connect(lambda _sha256: self.box.setFocus())
        self.tray.changed.connect(self._order_chips)
        self.tray.settled.connect(self._images_checked)
        box.submitted.connect(self._enter)
        box.stopRequested.connect(lambda: self.stopRequested.emit() if self.busy else None)
        self.count.source = box.toPlainText
        box.textChanged.connect(lambda: self.count.follow(box.document().isEmpty()))
        box.pasted.connect(self._check_paste)
        self.send.clicked.connect(self._send_or_stop)
        self.offer.attachChosen.connect(self._attach_text)
        self.offer.raiseChosen.connect(self.raiseContext)
        self.offer.cancelChosen.connect(self._cancel_offer)
        self.json_mode.toggled.connect(self._json_toggled)
        self.schema.textChanged.connect(self._schema_edited)

    def _build_schema(self, layout: QVBoxLayout) -> None:
        """The JSON schema editor and its check (shown above the field in JSON mode only)."""
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

    def _json_toggled(self, on: bool) -> None:
        self.schema.setVisible(on)
        self.schema_state.setVisible(on)
        if on:
            self.check_schema()

    def _schema_edited(self) -> None:
        if self.json_mode.isChecked():
            self.check_schema()

    def check_schema(self) -> dict[str, Any] | None:
        """The schema when it is valid and enforceable; None (and a reason shown) otherwise."""
        from app.controllers.chat import SchemaError, check_schema

        try:
            schema = json.loads(self.schema.toPlainText())
            if not isinstance(schema, dict):
                raise SchemaError("the schema must be a JSON object")
            found = check_schema(schema)
        except ValueError as exc:
            self.schema_state.setText(f"✗ not JSON: {exc}")
            mark(self.schema_state, "error")
            return None
        except SchemaError as exc:
            self.schema_state.setText(f"✗ {exc.message}")
            mark(self.schema_state, "error")
            return None
        after = "" if found.full else f"; {found.summary()}"
        self.schema_state.setText(f"✓ schema is valid{after}")
        mark(self.schema_state, "ok")
        return schema

    def effort_value(self) -> str | None:
        text = self.effort.currentText()
        return None if text.startswith("default") else text

    def _choose_files(self) -> None:
        from app.controllers.attachments import IMAGE_SUFFIXES, document_suffixes

        images = " ".join(f"*{s}" for s in sorted(IMAGE_SUFFIXES))
        documents = " ".join(f"*{s}" for s in sorted(document_suffixes()))
        kinds = f"Documents and images ({documents} {images});;Images ({images});;All files (*)"
        names = open_files(self, "Attach files or images", kinds)
        self.add_files([Path(n) for n in names])

    def add_files(self, files: list[Path], notes: dict[Path, str] | None = None) -> None:
        """Files the next message carries (each once), shown as chips (`notes`: said on a
        file's chip); image files are checked and become image chips (see the module
        guarantees)."""
        from app.controllers.attachments import is_image_file

        for image in [f for f in files if is_image_file(f)]:
            self.tray.add(image, image.name)
        files = [f for f in files if not is_image_file(f)]
        self.files += [f for f in files if f not in self.files]
        self.file_notes = {
            f: n for f, n in {**self.file_notes, **(notes or {})}.items() if f in self.files
        }
        self.attachments.show_files(self.files, self.file_notes)
        self._order_chips()

    def _order_chips(self) -> None:
        """Tab reaches the chips' × after the small controls: images, files, Remove all."""
        after: QWidget = self.field.more
        removes = [c.remove for c in self.image_chips.chips] + [
            c.remove for c in self.attachments.chips
        ]
        for remove in removes:
            QWidget.setTabOrder(after, remove)
            after = remove
        QWidget.setTabOrder(after, self.detach)

    def take_files(self) -> list[Path]:
        """The attached files, which the composer then forgets."""
        files, self.files, self.file_notes = self.files, [], {}
        self.add_files([])
        return files

    def _remove_file(self, path: Path) -> None:
        """A chip's ×: the message no longer carries that file."""
        self.files = [f for f in self.files if f != path]
        self.add_files([])
        self.box.setFocus()

    # --- images (`ImageTray`) ----------------------------------------------------------

    @property
    def images(self) -> list[Picture]:
        """The checked images the next message carries, in order."""
        return self.tray.images

    def take_images(self) -> list[Picture]:
        """The attached images, which the composer then forgets."""
        return self.tray.take()

    def _images_checked(self, all_taken: bool) -> None:
        """Send was pressed while images were checked: sent now, unless one was refused."""
        if self._send_when_checked:
            self._send_when_checked = False
            if all_taken:
                self._submit()

    # --- "@" and "/": documents, MCP resources and prompts (`mentions.py`) -------------

    @property
    def documents(self) -> list[Path] | None:
        """The library's documents, once read (None: not yet)."""
        return self.mentions.documents

    def set_documents(self, documents: list[Path]) -> None:
        """The library's documents (read off the GUI thread), offered after "@"."""
        self.mentions.set_documents(documents)

    def bind(self, chats: ChatController) -> None:
        """The open chat's queued messages and its draft follow `chats`' selection."""
        self.queued.bind(chats)
        self.drafts = Drafts(self.box, chats)  # `drafts.py`

    def use_mcp(self, context: McpContext, doc: Callable[[], ChatDoc], jobs: Background) -> None:
        """Offer the MCP servers of the conversation `doc()` after "@" and "/" (called again:
        the new context replaces the old)."""
        from app.ui.composer.mcp_offers import McpOffers

        if self.mcp is not None:
            self.mcp.detach()
        self.mcp = McpOffers(self.mentions, self.tray, self.add_files, context, doc, jobs, self)

    # --- sending, and a message that cannot fit ------------------------------------------

    def _send_or_stop(self) -> None:
        """The button: Stop while this chat's answer streams; otherwise send (or queue)."""
        if self.busy:
            self.stopRequested.emit()
            return
        self._submit()

    def _enter(self) -> None:
        """Enter sends (queues, while an answer streams); with nothing typed or attached
        while this chat's answer streams it does nothing: Stop and Esc stop."""
        if self.busy and not (self._text().strip() or self.images or self.files):
            return
        self._submit()

    def _submit(self) -> None:
        """Send, unless the message cannot fit (a long message not counted yet is counted
        first)."""
        if self.tray.busy:
            self._send_when_checked = True  # sent once its images are checked
            return
        if self.tray.text_only_note():
            self.tray.say(self.tray.text_only_note(), problem=True)
            return
        text = self._text()
        if self.count.current_for(text) or len(text) < QUICK_CHARS:
            self._decide(self.count.fit if self.count.current_for(text) else None)
            return
        future = self.count.count_now(text)
        future.add_done_callback(
            lambda f: self._decide(f.result()) if self._text() == text else None
        )

    def _decide(self, fit: Fit | None) -> None:
        if fit is not None and not fit.fits and not fit.estimated:
            self.offer.offer(fit, pasted=False)  # an endpoint's context is its server's to say
        else:
            self.submitted.emit()

    def _text(self) -> str:
        return self.box.toPlainText()

    def _check_paste(self, text: str) -> None:
        """A large paste: counted at once; one that does not fit brings the offer."""
        self._pasted = text
        future = self.count.count_now(self._text())
        future.add_done_callback(lambda f: self._paste_counted(text, f.result()))

    def _paste_counted(self, text: str, fit: Fit | None) -> None:
        if fit is not None and not fit.fits and not fit.estimated and self._pasted == text:
            self.offer.offer(fit, pasted=True)

    def _attach_text(self) -> None:
        """The pasted text (or the whole message) goes into a file the message carries."""
        from app.controllers.fit import paste_file

        whole = self.box.toPlainText()
        pasted = self._pasted if self._pasted and self._pasted in whole else whole
        self.box.setPlainText(whole.replace(pasted, "", 1).strip())
        self._pasted = ""
        self.add_files([paste_file(pasted)])
        self.box.setPlaceholderText("Ask something about the attached text")
        self.box.setFocus()

    def _cancel_offer(self) -> None:
        """Cancel: a large paste is taken out again; a typed message stays, not sent."""
        whole = self.box.toPlainText()
        if self._pasted and self._pasted in whole:
            self.box.setPlainText(whole.replace(self._pasted, "", 1))
        self._pasted = ""
        self.box.setFocus()

    def set_features(self, tools: bool, effort: bool) -> None:
        """Offer tools and a reasoning effort only for a model that has them (and say what is
        on in the more menu: a conversation switched sets it without signals)."""
        self.effort_label.setVisible(effort)
        self.effort.setVisible(effort)
        if not effort:
            self.effort.setCurrentIndex(0)
        if self.images:  # another model may see them (or not)
            self.tray.say(self.tray.text_only_note())
        self.tools_button.setEnabled(tools)
        self.tools_button.setToolTip(
            "The tools this conversation may call"
            if tools
            else "This model's chat template has no tool-call format"
        )
        self.field.say_more()

    def set_tools_on(self, count: int) -> None:
        """How many tools the conversation has on, said on the Tools button ("Tools · 2")."""
        self.field.say_tools(count)

    def set_busy(self, busy: bool, where: str = "") -> None:
        """Send; Stop while this chat's answer streams; Queue while another chat's does
        (`where`: its title)."""
        self.busy = busy and not where  # Stop and Esc act on this chat's answer only
        show_state(self.send, self.box, busy, where)


QUICK_CHARS = 4_000  # a message shorter than this is sent without waiting for its count

__all__ = ["Composer", "MessageBox"]
