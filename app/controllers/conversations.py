"""The conversations of the window: the selected one, the sidebar's list, the trash, and
every read and write of the history on the store's own thread.

Guarantees: the GUI thread never waits on the disk — store work runs on one writer thread, in
the order asked, and its results come back as signals (`listChanged` with `listing`,
`docChanged` with `doc`, `storeFailed` with what went wrong); a save takes its rows at once,
so later edits cannot tear it; after `close` nothing more is asked of the store. The user may
switch chats or start a new one while a reply streams: the streaming conversation (`answering`)
is kept as the one object its reply is written to, shown again when selected, and cannot be
deleted until its reply ends. Work that holds a conversation (a turn, a compaction: `hold`)
makes it `answering` and the window `busy` until `release`, and Stop sets the cancel event
`hold` gave it. An empty chat is never left behind: one the user switches away from with no
message, no instructions, its first title, not pinned, and nothing of it held elsewhere (`keeps`:
a draft in the message box, a queued message) is dropped from the list and the store, so empty
"New chat" rows never pile up (a deleted one stays in the trash, for Undo).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal

from app.documents.kept import collect_kept
from app.domain.budget import Overflow
from app.domain.history import ChatDoc, ConversationList, Reply, Version, snippet
from app.store.database import StoreError
from app.store.history import HistoryStore
from app.store.rows import Rows, conversation_row, reply_rows, structure_rows

T = TypeVar("T")
NEW_TITLE = "New chat"  # a conversation's title until its first message names it


FRESH_SETTINGS = ("tools", "offline", "library", "endpoint")  # what New chat starts afresh


class ConversationsController(QObject):
    """The conversations and their history; `ChatController` adds the running turn."""

    docChanged = Signal()  # the whole transcript must be shown again (switch, flip, edit)
    storeFailed = Signal(str)  # a save failed: what happened (the conversation stays in memory)
    listChanged = Signal()  # the sidebar must be shown again
    debugChanged = Signal(int)  # turn index whose debug record grew
    analysisFound = Signal(list)  # [(turn index, snippet)]: the debug pane's search
    notice = Signal(str)  # something the user should know now (a remote endpoint is waiting)
    busyChanged = Signal(bool)  # a reply streams (or a compaction runs), or no longer
    _delivered = Signal(object)  # a store call's result, handed to the GUI thread

    def __init__(self, conversations: ConversationList | HistoryStore | None = None) -> None:
        super().__init__()
        self.conversations = conversations or ConversationList()
        self.store = conversations if isinstance(conversations, HistoryStore) else None
        self._writer = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        self._checkpointed = 0.0
        self.doc: ChatDoc = ChatDoc()  # a fresh chat until the latest one is read
        self.listing: list[ChatDoc] = []  # the sidebar: titles and pins, no turns
        self.trashed: list[tuple[str, str, float]] = []
        self.search_text = ""
        self.busy = False  # a reply streams (set by the turn side)
        self.answering: ChatDoc | None = None  # the conversation whose reply streams
        self._cancel: threading.Event | None = None  # what Stop sets, while `busy`
        self._inflight = 0  # store calls whose result is not yet shown
        self._closed = False
        self._list_asked = 0
        # what else holds a chat that has no message yet (a draft, queued messages): kept
        self.keeps: list[Callable[[ChatDoc], bool]] = []
        self._delivered.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def _forget(self, doc_id: str) -> None:
        """A conversation goes to the trash: what is kept for it ends (the turn side adds)."""

    def _io(self, work: Callable[[], T], then: Callable[[T], None] | None = None) -> None:
        """Run `work` on the store's thread, after every save asked before it, and hand its
        result to `then` on the GUI thread; a failure is reported with `storeFailed`. After
        `close`, nothing more is asked of the store."""
        if self._closed:
            return
        self._inflight += 1

        def run() -> None:
            landed: Callable[[], None] = lambda: None  # noqa: E731
            try:
                result = work()
                if then is not None:
                    landed = partial(then, result)
            except StoreError as exc:
                self.storeFailed.emit(exc.message)
            finally:
                self._delivered.emit(landed)

        self._writer.submit(run)

    def _deliver(self, landed: Callable[[], None]) -> None:
        self._inflight -= 1
        landed()

    async def stored(self, work: Callable[[], T]) -> T:
        """`work`'s result, run on the store's thread after every save asked before it (what a
        loaded conversation has not read yet is read there, never on the GUI thread)."""
        return await asyncio.get_running_loop().run_in_executor(self._writer, work)

    def settle(self, timeout_s: float = 30.0) -> None:
        """Wait until every store call asked so far is done and its result shown (tests)."""
        deadline = time.monotonic() + timeout_s
        while self._inflight and time.monotonic() < deadline:
            self.saved()
            QCoreApplication.processEvents()

    def _latest_or_new(self) -> ChatDoc:
        """The newest conversation not in the trash, or a new one (on the store's thread)."""
        listed = self.conversations.listed()
        latest = self.conversations.get(listed[0].id) if listed else None
        return latest if latest is not None else self.conversations.new()

    def _show(
        self, doc: ChatDoc | None, instead_of: ChatDoc | None = None, *, leaving: bool = False
    ) -> None:
        """Make `doc` the selected conversation (unless the user has started on the
        conversation it was read to replace), then show the list again. The conversation
        whose reply streams is shown as the object its reply is written to, never as a copy
        read from the store. `leaving`: the user switched away, and the chat left is dropped
        if it is empty (see the module guarantees)."""
        untouched = instead_of is None or (self.doc is instead_of and not self.doc.turns)
        if doc is not None and self.answering is not None and doc.id == self.answering.id:
            doc = self.answering
        if doc is not None and untouched and doc is not self.doc:
            left = self.doc
            drop = leaving and self.empty(left)  # before the box's draft moves with the switch
            self.doc = doc
            self.docChanged.emit()
            if drop:
                self._drop(left.id)
        self.refresh_list()

    def empty(self, doc: ChatDoc) -> bool:
        """Whether `doc` is an empty chat nothing holds: no message, no instructions, its first
        title, not pinned, not answering, nothing in `keeps` holding it."""
        if doc.turns or doc.instructions.strip() or doc.pinned or doc.title != NEW_TITLE:
            return False
        return doc is not self.answering and not any(keep(doc) for keep in self.keeps)

    def _drop(self, doc_id: str) -> None:
        """An empty chat goes for good: from the store (not to the trash) and what is kept
        for it."""
        self._forget(doc_id)

        def work() -> None:
            self.conversations.delete(doc_id)
            self.conversations.purge(doc_id)

        self._io(work)

    def refresh_list(self, search: str | None = None) -> None:
        """Read the sidebar's list (matching `search`, or the last search) and the trash on
        the store's thread; `listChanged` says when they are in `listing` and `trashed`."""
        if search is not None:
            self.search_text = search
        self._list_asked += 1
        asked, text = self._list_asked, self.search_text

        def shown(result: tuple[list[ChatDoc], list[tuple[str, str, float]]]) -> None:
            if asked == self._list_asked:  # a later search replaces this one
                self.listing, self.trashed = result
                self.listChanged.emit()

        self._io(lambda: (self.conversations.listed(text), self.conversations.trash()), shown)

    def hold(self, doc: ChatDoc) -> threading.Event:
        """`doc` is busy with work that Stop ends (a turn, a compaction): its cancel event."""
        self.answering = doc
        self.busy = True
        self._cancel = threading.Event()
        self.busyChanged.emit(True)
        return self._cancel

    def release(self) -> None:
        """The work `hold` started has ended."""
        self._cancel = None
        self.answering = None
        self.busy = False
        self.busyChanged.emit(False)

    @property
    def shows_answer(self) -> bool:
        """Whether the selected conversation is the one whose reply streams."""
        return self.answering is not None and self.doc is self.answering

    def set_endpoint(self, name: str | None) -> None:
        """Answer this conversation from endpoint `name` (None: the model on this computer)."""
        if name != self.doc.endpoint and not self.busy:
            self.doc.endpoint = name
            self.persist()
            self.refresh_list()

    def set_library(self, on: bool) -> None:
        """Whether the selected conversation's messages carry the documents library's passages."""
        self.doc.library = on
        self.persist()

    def set_overflow(self, policy: Overflow) -> None:
        """What the selected conversation does once it outgrows the context (saved with it)."""
        self.doc.overflow = policy
        self.persist()

    def new_chat(self) -> None:
        """A new, empty conversation (a streaming reply goes on in its own); an open chat that
        is empty already, and that nothing holds (`empty`), is kept instead, so empty "New
        chat" rows never pile up — unless its settings are not a new chat's (tools, offline,
        the library, an endpoint): New chat means a fresh one."""
        fresh = ChatDoc()
        if self.empty(self.doc) and all(
            getattr(self.doc, name) == getattr(fresh, name) for name in FRESH_SETTINGS
        ):
            return
        self.doc = ChatDoc()
        self.docChanged.emit()
        self._io(partial(self.conversations.save, self.doc), lambda _: self.refresh_list())

    def select(self, doc_id: str) -> None:
        """Show conversation `doc_id` (read on the store's thread; the streaming one at once)."""
        if doc_id == self.doc.id:
            return
        if self.answering is not None and doc_id == self.answering.id:
            self._show(self.answering, leaving=True)
        else:
            self._io(partial(self.conversations.get, doc_id), partial(self._show, leaving=True))

    def _same(self, doc_id: str) -> list[ChatDoc]:
        """The conversations in memory that are `doc_id` (the shown one, the answering one)."""
        docs = [self.doc] if self.doc.id == doc_id else []
        answering = self.answering
        if answering is not None and answering.id == doc_id and answering is not self.doc:
            docs.append(answering)
        return docs

    def rename(self, doc_id: str, title: str) -> None:
        for doc in self._same(doc_id) if title.strip() else []:
            doc.title = title.strip()  # the next save writes it too
        self._io(partial(self.conversations.rename, doc_id, title), lambda _: self.refresh_list())

    def pin(self, doc_id: str, pinned: bool = True) -> None:
        for doc in self._same(doc_id):
            doc.pinned = pinned
        self._io(partial(self.conversations.pin, doc_id, pinned), lambda _: self.refresh_list())

    def delete(self, doc_id: str) -> None:
        """To the trash; when it was the selected conversation, the newest one is shown."""
        if self.answering is not None and doc_id == self.answering.id:
            self.notice.emit("An answer is still coming in this chat: stop it to delete the chat.")
            return
        selected = doc_id == self.doc.id
        self._forget(doc_id)

        def work() -> ChatDoc | None:
            self.conversations.delete(doc_id)
            return self._latest_or_new() if selected else None

        self._io(work, self._show)

    def debug_ready(self, turn: int) -> bool:
        """Whether the debug record of the turn's shown reply is in memory; when not, it is
        read on the store's thread and `debugChanged(turn)` says when it is."""
        reply = self.doc.turns[turn].version.reply if 0 <= turn < len(self.doc.turns) else None
        if reply is None or reply.debug_loaded:
            return True
        self._io(lambda: reply.debug, lambda _: self.debugChanged.emit(turn))
        return False

    def search_analysis(self, text: str) -> None:
        """Find `text` in the analysis of the shown turns' replies (the debug pane's search;
        the sidebar never searches analysis); `analysisFound` gives the turns."""
        doc, needle, store = self.doc, text.strip(), self.store

        def work() -> list[tuple[int, str]]:
            if not needle:
                return []
            stored = dict(store.search_analysis(doc.id, needle)) if store is not None else {}
            found: list[tuple[int, str]] = []
            for index, turn in enumerate(doc.turns):
                for reply in turn.version.replies:
                    hit = stored.get(reply.id)
                    if hit is None and reply.debug_loaded:  # not saved yet, or changed since
                        hit = snippet(reply.debug.analysis, needle)
                    if hit is not None:
                        found.append((index, hit))
            return found

        self._io(work, self.analysisFound.emit)

    def trash(self) -> list[tuple[str, str, float]]:
        """(id, title, when deleted) of the trashed conversations, as last read."""
        return self.trashed

    def restore(self, doc_id: str) -> None:
        self._io(partial(self.conversations.restore, doc_id), lambda _: self.refresh_list())

    def empty_trash(self) -> None:
        """Remove every trashed conversation for good (the user asked), and the attached files
        no remaining conversation uses."""

        def work() -> int:
            self.conversations.purge(older_than_days=0)
            return collect_kept(self.conversations.all_ids())

        self._io(work, lambda _: self.refresh_list())

    def undo_delete(self) -> None:
        self._io(self.conversations.undo_delete, lambda _: self.refresh_list())

    def persist(
        self,
        version: Version | None = None,
        reply: Reply | None = None,
        *,
        structure: bool = True,
        doc: ChatDoc | None = None,
    ) -> None:
        """Save conversation `doc` (the selected one by default) and `reply` on the store's
        thread: the rows are taken now, written in order; a failed write is reported with
        `storeFailed`, nothing is lost."""
        if self.store is None or self._closed:
            return
        doc = doc or self.doc
        rows = structure_rows(doc) if structure else Rows(conversation_row(doc))
        if version is not None and reply is not None:
            reply_rows(doc, version, reply, rows)
        self._checkpointed = time.monotonic()
        self._writer.submit(self._write, self.store, rows)

    def _write(self, store: HistoryStore, rows: Rows) -> None:
        try:
            store.write(rows)
        except StoreError as exc:
            self.storeFailed.emit(exc.message)

    def saved(self) -> None:
        """Wait until every save asked so far is written (tests, closing the window)."""
        self._writer.submit(lambda: None).result()


__all__ = ["ConversationsController"]
