"""Messages that wait their turn: each chat sends on its own while another chat's answer streams.

The window runs one answer at a time: every window turn runs on the one engine thread
(`EngineBridge`) and in the one sequence the local worker keeps for the window's own turns
(`reserved`), so a second chat's message cannot start beside the first. It waits here instead,
shown in its own chat, and is sent when the window is free.

Guarantees:
- a message queued (`add`) keeps everything it was sent with: its text, its checked images,
  the files it carries, the reasoning effort and JSON schema chosen for it, and its chat;
- queued messages are sent one at a time, oldest first across all chats, each into its own
  chat whether that chat is shown or not (a chat not shown is read from the store, never
  taken from a stale copy), as soon as nothing streams; one whose chat cannot be answered now
  (no model loaded, its endpoint gone) waits and the next that can goes; loading a model
  sends what waited for one;
- a queued message can be held (`hold`: while the user edits it, it is not sent; the others
  go on), edited (`edit`: its text; an empty text is refused), removed
  (`remove`), or sent now (`send_now`): first in line, and when what streams is its own chat's
  answer, that answer is stopped (its partial text kept) so the message goes at once; another
  chat's answer is never stopped from here;
- a queued message is never lost on the way: one that could not be sent after all (another
  message started first) goes back to the head of the queue; a chat sent to the trash takes its
  queued messages with it (`forget`);
- Regenerate, Edit (with its new text) and Continue asked in a chat while another chat's
  answer streams (`ask`) are queued the same way (`add_action`: kept, ordered, held, edited
  — an edit's text only —, removed, sent now like a message; asked twice, one is kept: a
  second edit of the same message replaces the first's text), and run in their chat, shown or
  not, by `queued_actions.run`; one that no longer applies when its time comes (its turn gone,
  its answer no longer the one to continue) is dropped and said;
- queued messages live as long as the app runs: closing the window drops them (they were
  never sent, so nothing of them is in the history);
- `changed` is emitted after every change of the queue.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal, SignalInstance

from app.controllers.attachments import send_with
from app.controllers.fit import Counted
from app.controllers.queued_actions import ActingChat, Action, Kind, described, gone, run
from app.domain.history import ChatDoc
from app.domain.messages import ReasoningEffort

if TYPE_CHECKING:
    from app.images.decode import Picture


@dataclass(frozen=True)
class Queued:
    """One message waiting for its turn, with what it was sent with."""

    id: int
    doc_id: str  # its chat
    chat: str  # its chat's title when it was queued
    endpoint: str | None  # its chat's endpoint (None: the model on this computer)
    text: str
    images: tuple[Picture, ...] = ()
    files: tuple[Path, ...] = ()
    effort: ReasoningEffort | None = None
    json_schema: dict[str, Any] | None = None
    kind: Kind = "message"  # or an action on one of its chat's turns (`queued_actions.py`)
    turn: str = ""  # an action's turn (its id)
    about: str = ""  # an action's turn's message, as it was when the action was asked

    @property
    def words(self) -> str:
        """What it is, in words: a message's text, or the action said."""
        return described(self.kind, self.about, self.text)


def counted(items: Sequence[Queued]) -> str:
    """How many wait: "1 message queued", "3 messages queued", or "2 queued" where a
    Regenerate, Edit or Continue is among them."""
    if any(item.kind != "message" for item in items):
        return f"{len(items)} queued"
    return "1 message queued" if len(items) == 1 else f"{len(items)} messages queued"


class QueueingChat(Counted, ActingChat, Protocol):
    """What the queue needs of the chat controller (passed in: never imported here)."""

    answering: ChatDoc | None
    effort: ReasoningEffort | None
    json_schema: dict[str, Any] | None

    @property
    def notice(self) -> SignalInstance: ...
    @property
    def busyChanged(self) -> SignalInstance: ...
    @property
    def shows_answer(self) -> bool: ...
    def answers(self, endpoint: str | None) -> bool: ...
    def send_to(
        self,
        doc: ChatDoc,
        text: str,
        images: Sequence[Picture] = (),
        effort: ReasoningEffort | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> bool: ...
    def read(self, doc_id: str, then: Callable[[ChatDoc | None], None]) -> None: ...
    def stop(self) -> None: ...


class SendQueue(QObject):
    """See the module guarantees."""

    changed = Signal()

    def __init__(self, chat: QueueingChat) -> None:
        super().__init__()
        self.chat = chat
        self.items: list[Queued] = []
        self.sending: Queued | None = None  # on its way (its chat read, its files attached)
        self._ids = itertools.count(1)
        self._task: asyncio.Task[object] | None = None
        self.closed = False
        self.held: set[int] = set()  # being edited: not sent until saved or cancelled
        chat.busyChanged.connect(lambda busy: None if busy else self.go_on())
        chat.host.loaded.connect(lambda _name: self.go_on())  # what waited for a model

    # --- what the user does -------------------------------------------------------------

    @property
    def must_wait(self) -> bool:
        """Whether a message sent now must be queued: an answer streams (or a compaction
        runs), or a queued message is on its way."""
        return self.chat.busy or self.sending is not None

    def add(
        self, text: str, images: Sequence[Picture] = (), files: Sequence[Path] = ()
    ) -> Queued | None:
        """Queue a message for the selected chat, with the effort and schema chosen for it
        now; None (nothing queued) when there is nothing to send."""
        if not (text.strip() or images or files):
            return None
        chat, doc = self.chat, self.chat.doc
        item = Queued(
            next(self._ids),
            doc.id,
            doc.title,
            doc.endpoint,
            text,
            tuple(images),
            tuple(files),
            chat.effort,
            chat.json_schema,
        )
        self.items.append(item)
        self.changed.emit()
        self.go_on()  # nothing streams after all (it ended meanwhile): sent at once
        return item

    def ask(self, kind: Action, turn_index: int, text: str = "") -> bool:
        """Regenerate, Edit (`text`) or Continue asked on the selected chat's turn
        `turn_index`: done at once when nothing holds the window; queued (True) while another
        chat's answer streams or a queued message is on its way."""
        chat = self.chat
        if self.must_wait and not chat.shows_answer:
            return self.add_action(kind, turn_index, text) is not None
        if kind == "regenerate":
            chat.regenerate(turn_index)
        elif kind == "edit":
            chat.edit(turn_index, text)
        else:
            chat.continue_reply()
        return False

    def add_action(self, kind: Action, turn_index: int, text: str = "") -> Queued | None:
        """Queue an action on the selected chat's turn `turn_index` (see the module
        guarantees); None when there is nothing to do (an edit with no text)."""
        doc = self.chat.doc
        turn = doc.turns[turn_index]
        if kind == "edit" and not (text.strip() or turn.version.images):
            return None
        for index, item in enumerate(self.items):
            if (item.doc_id, item.kind, item.turn) == (doc.id, kind, turn.id):
                self.items[index] = replace(item, text=text)  # asked again: one, the latest
                self.changed.emit()
                return self.items[index]
        about = turn.version.user_text
        item = Queued(
            next(self._ids),
            doc.id,
            doc.title,
            doc.endpoint,
            text,
            kind=kind,
            turn=turn.id,
            about=about,
        )
        self.items.append(item)
        self.changed.emit()
        self.go_on()
        return item

    def of(self, doc_id: str) -> list[Queued]:
        """Chat `doc_id`'s queued messages, in the order they will be sent."""
        return [item for item in self.items if item.doc_id == doc_id]

    def edit(self, item_id: int, text: str) -> bool:
        """The message's new text; False (unchanged) when it would leave nothing to send or
        the message is no longer queued."""
        for index, item in enumerate(self.items):
            textual = item.kind in ("message", "edit")  # a regenerate has no text of its own
            if item.id == item_id and textual and (text.strip() or item.images or item.files):
                self.items[index] = replace(item, text=text)
                self.changed.emit()
                return True
        return False

    def hold(self, item_id: int, held: bool) -> None:
        """Keep the message from being sent (while it is edited), or let it go again."""
        if held:
            self.held.add(item_id)
        else:
            self.held.discard(item_id)
            self.go_on()

    def remove(self, item_id: int) -> None:
        """The message is not sent."""
        self.items = [item for item in self.items if item.id != item_id]
        self.held.discard(item_id)
        self.changed.emit()

    def send_now(self, item_id: int) -> None:
        """First in line; its own chat's streaming answer is stopped so that it goes at once
        (see the module guarantees)."""
        found = [item for item in self.items if item.id == item_id]
        if not found:
            return
        self.items = found + [item for item in self.items if item.id != item_id]
        self.held.discard(item_id)
        self.changed.emit()
        answering = self.chat.answering
        if self.chat.busy and answering is not None and answering.id == found[0].doc_id:
            self.chat.stop()  # its release sends it
        elif not self.must_wait and not self.chat.answers(found[0].endpoint):
            self.chat.notice.emit("No model is loaded yet: the message is sent once one is.")
        else:
            self.go_on()

    def forget(self, doc_id: str) -> None:
        """Chat `doc_id` went to the trash: its queued messages are not sent."""
        if any(item.doc_id == doc_id for item in self.items):
            self.items = [item for item in self.items if item.doc_id != doc_id]
            self.changed.emit()

    # --- sending ------------------------------------------------------------------------

    def go_on(self) -> None:
        """Send the next queued message once the event that freed the window has been heard
        by everyone (a turn's end is painted before the next one starts)."""
        if self.items and not self.closed:
            QTimer.singleShot(0, self, self._next)

    def close(self) -> None:
        """The window closes: nothing more is sent, and what was queued is dropped."""
        self.closed = True
        self.items.clear()

    def _next(self) -> None:
        if self.must_wait or self.closed:
            return
        ready = (i for i in self.items if i.id not in self.held and self.chat.answers(i.endpoint))
        item = next(ready, None)
        if item is None:
            return
        self.items.remove(item)
        self.sending = item
        self.changed.emit()
        if self.chat.doc.id == item.doc_id:
            self._send(item, self.chat.doc)
        else:  # not shown: its chat as stored, never a copy kept from before
            self.chat.read(item.doc_id, lambda doc: self._read(item, doc))

    def _read(self, item: Queued, doc: ChatDoc | None) -> None:
        shown = self.chat.doc
        if shown.id == item.doc_id:  # shown meanwhile: the object the view draws
            doc = shown
        if doc is None:  # its chat is gone
            self._done(item, sent=True)
            return
        self._send(item, doc)

    def _send(self, item: Queued, doc: ChatDoc) -> None:
        """Into its chat: with files (or the library's passages) they are attached first, on
        the engine thread, as the composer's own messages are; an action runs on its turn."""
        if item.kind != "message":
            self._act(item, doc)
            return
        if item.files or doc.library:
            aimed = _Aimed(self.chat, doc, item)
            self._task = asyncio.ensure_future(send_with(aimed, item.text, item.files, item.images))
            self._task.add_done_callback(lambda task: self._attached(item, aimed, task))
            return
        sent = self.chat.send_to(doc, item.text, item.images, item.effort, item.json_schema)
        self._done(item, sent)

    def _act(self, item: Queued, doc: ChatDoc) -> None:
        assert item.kind != "message"
        started = run(self.chat, doc, item.kind, item.turn, item.text)
        if started is None:  # it no longer applies: dropped, and said
            self.chat.notice.emit(gone(item.kind, item.chat))
        self._done(item, started is not False)

    def _attached(self, item: Queued, aimed: _Aimed, task: asyncio.Task[object]) -> None:
        failed = None if task.cancelled() else task.exception()
        if failed is not None:  # kept, and said: it goes with the next answer's end
            self.chat.notice.emit(f"A message queued in “{item.chat}” was not sent: {failed}")
        self._done(item, aimed.sent)

    def _done(self, item: Queued, sent: bool) -> None:
        self.sending = None
        if not sent:
            self.items.insert(0, item)  # another message started first: it waits again
        self.changed.emit()
        if sent and not self.chat.busy:  # its chat was gone: the next one
            self.go_on()


class _Aimed:
    """The chat controller aimed at one conversation, shown or not: what `send_with` reads
    (the conversation, the model, the answer's reserve) and its send, into that conversation
    with the queued message's effort and schema."""

    def __init__(self, chat: QueueingChat, doc: ChatDoc, item: Queued) -> None:
        self.chat, self.doc, self.item = chat, doc, item
        self.host, self.remote, self.max_tokens = chat.host, chat.remote, chat.max_tokens
        self.overflow, self.busy = chat.overflow, chat.busy
        self.sent = False

    @property
    def notice(self) -> SignalInstance:
        return self.chat.notice

    def send(self, text: str, images: Sequence[Picture] = ()) -> bool:
        item = self.item
        self.sent = self.chat.send_to(self.doc, text, images, item.effort, item.json_schema)
        return self.sent


__all__ = ["Queued", "QueueingChat", "SendQueue", "counted"]
