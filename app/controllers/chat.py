"""The chat controller: one user turn from the composer to a finished reply, on the asyncio loop.

Guarantees:
- the GUI thread never waits on the model, a tool or the disk: generation and tools run on
  the engine thread (`EngineBridge`), and their events come back to the loop in order; the
  store is read and written on its own thread, in the order asked (`_io`), and results come
  back as signals (`listChanged` with `listing`, `docChanged` with `doc`);
- visible text is coalesced: deltas are gathered and handed to the view at most every
  `FLUSH_MS` (40 ms), one signal per segment per flush, and the streaming answer is saved as
  it grows (`ReplyPainter`, `app/controllers/reply_painter.py`);
- analysis goes only to the reply's `DebugRecord`, never into a `Segment`;
- stop, a dead worker, a crashed tool or engine thread all end the turn with a message in
  context; the partial reply is kept (marked stopped, failed or incomplete) and can be
  continued or regenerated;
- the reply goes on while the user reads or writes in another conversation (or a new one): it
  is written to its own conversation (`answering`), painted only while that conversation is
  shown (it is drawn whole when shown again), and a tool call waiting there is said in a
  notice;
- regenerate keeps the old reply as an alternative; editing a user message starts a new
  version of that turn and keeps the old branch;
- a message's images are on its `Version` (an edited one keeps them), held in memory for the
  turn, and their bytes kept with the conversation on the store's thread, as are the images a
  reply's tools returned once the reply is saved (a reopened conversation shows them again);
- a tool call waits for the user's decision (run, run with edited arguments, allow for this
  chat, always, deny) shown on its card; stop denies what is still waiting;
- Compact now and Undo compaction are `compactions` (`compactions.py`), held like a turn;
- one answer runs at a time: a message sent while one streams waits in `queue`
  (`send_queue.py`), shown in its own chat, and is sent into that chat (`send_to`, shown or
  not) when the window is free, as do Regenerate, Edit and Continue asked in another chat
  (`queued_actions.py`: they run on the conversation given, shown or not); the window's Stop
  and Esc (`stop_shown`) stop only the selected chat's answer, never another chat's;
- each event of a turn is folded into its reply by `turn_fold.py`;
- empty chats earlier sessions left are removed once at start, on the store's thread, before
  the chat to show is read (`stale_chats.py`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import Signal

from app.constrain.constraint import ToolChoice, check_schema
from app.controllers.answerer import answerer
from app.controllers.approvals import Answer, WindowApprovals
from app.controllers.attachments import keeping, remember_images
from app.controllers.compactions import Compactions
from app.controllers.conversations import ConversationsController
from app.controllers.model_host import ModelHost
from app.controllers.remote_host import RemoteHost
from app.controllers.reply_painter import FLUSH_MS, ReplyPainter
from app.controllers.send_queue import SendQueue
from app.controllers.stale_chats import drop_left_empty
from app.controllers.tool_host import WindowTools
from app.controllers.turn_fold import on_event
from app.controllers.turn_inputs import TurnState, read_stored, reply_for, sees_images, turn_spec
from app.controllers.turn_source import turn_events
from app.domain.budget import Overflow
from app.domain.history import ChatDoc, ConversationList, Reply, Segment, Turn, Version
from app.domain.listing import title_of
from app.domain.messages import ReasoningEffort
from app.domain.reply import ReplyBuilder
from app.engine.session import REMOTE
from app.errors import SchemaError
from app.settings import load_settings
from app.store.history import HistoryStore
from app.tools.approval import ApprovalPolicy, Mode
from app.tools.calls import PendingCall
from app.tools.trust import PluginIdentity

if TYPE_CHECKING:
    from app.images.decode import Picture

T = TypeVar("T")


class ChatController(ConversationsController):
    """Drives the turns of the selected conversation; the view listens to its signals."""

    replyStarted = Signal(int)  # turn index
    segmentAdded = Signal(int, int)  # turn, segment
    segmentText = Signal(int, int, str)  # turn, segment, appended text (coalesced)
    segmentUpdated = Signal(int, int)  # turn, segment (tool state, JSON verdict)
    replyFinished = Signal(int)  # turn index
    progressed = Signal(int, object)  # turn, its `Progress` (a prompt read, an image encoded)
    statusChanged = Signal(dict)  # tokens/s, first token ms, context used

    def __init__(
        self,
        host: ModelHost,
        conversations: ConversationList | HistoryStore | None = None,
        remote: RemoteHost | None = None,
    ) -> None:
        super().__init__(conversations)
        self.host = host
        self.remote = remote  # remote endpoints; None: only the model on this computer
        self.effort: ReasoningEffort | None = None
        self.tool_choice: ToolChoice = "auto"  # Tools… ▸ Require a tool call: "required"
        self.json_schema: dict[str, Any] | None = None
        self.max_tokens = 1024
        settings = load_settings()
        self.overflow = Overflow(settings.overflow)  # a conversation's own policy wins
        self.compact_at = settings.compact_at_percent / 100  # summarise: when it compacts
        self.keep_recent = settings.keep_recent_percent / 100  # and what it keeps verbatim
        self._task: asyncio.Task[None] | None = None
        self.approvals = WindowApprovals()  # each conversation's policy, the waiting calls
        self.tools = WindowTools()  # plugins, and each conversation's enabled tools
        self._builder: ReplyBuilder | None = None  # the streaming reply's, while it streams
        self.last_builder: ReplyBuilder | None = None  # the last turn's (its stop, its issues)
        self.token_table: tuple[bytes, ...] = ()  # the model's token pieces, for the debug pane
        self.special_tokens: dict[int, bytes] = {}  # its special tokens, spelled out (the same)
        self.vocab_of: object = None  # the model `token_table` is of (another: read again)
        self.score_tokens = False  # the debug pane is open: tokens come with probabilities
        self.painter = ReplyPainter(self, self)  # the streaming reply's changes, to the view
        self.docChanged.connect(self.painter.drop)  # the view draws the new one whole
        self.compactions = Compactions(self)  # compact now, undo (`compactions.py`)
        self.queue = SendQueue(self)  # messages waiting for the answer to end (`send_queue.py`)
        self._io(partial(drop_left_empty, self.conversations, time.time()))  # earlier sessions'
        self._io(self._latest_or_new, partial(self._show, instead_of=self.doc))

    # --- conversations ---------------------------------------------------------------

    def _forget(self, doc_id: str) -> None:
        self.tools.forget(doc_id)  # its python interpreter ends with the conversation
        self.queue.forget(doc_id)  # and its queued messages are not sent

    def read(self, doc_id: str, then: Callable[[ChatDoc | None], None]) -> None:
        """Conversation `doc_id` as stored (None: not there), read on the store's thread and
        handed to `then` on the GUI thread."""
        self._io(partial(self.conversations.get, doc_id), then)

    @property
    def can_answer(self) -> bool:
        """A model is loaded here, or the conversation talks to a remote endpoint."""
        return self.answers(self.doc.endpoint)

    def answers(self, endpoint: str | None) -> bool:
        """Whether a conversation on `endpoint` (None: the model here) can be answered now."""
        return self.host.ready or (endpoint is not None and self.remote is not None)

    def model_features(self) -> tuple[bool, bool]:
        """(tools, effort): whether the conversation's model can call tools (its template has a
        tool-call format) and takes a reasoning effort; a remote endpoint decides for itself."""
        remote = self.doc.endpoint is not None and self.remote is not None
        capabilities = REMOTE if remote else self.host.capabilities
        if capabilities is None:
            return True, True
        return capabilities.tools, capabilities.effort

    @property
    def sees_images(self) -> bool | None:
        """Whether the conversation's model sees images (`turn_inputs.sees_images`)."""
        return sees_images(self.host, self.doc.endpoint is not None and self.remote is not None)

    def set_offline(self, offline: bool) -> None:
        """Mark the selected conversation offline: its tools may not use the network."""
        self.doc.offline = offline
        self.tools.forget(self.doc.id)

    def set_tools(self, names: tuple[str, ...]) -> None:
        """The tools enabled for the selected conversation."""
        self.doc.tools = names
        self.tools.forget(self.doc.id)

    # --- turns -------------------------------------------------------------------------

    def send(self, text: str, images: Sequence[Picture] = ()) -> bool:
        """Send a user message (with its checked `images`, shown to the model before the
        text) in the selected conversation; False when it cannot be sent now (busy, nothing to
        send, no model)."""
        return self.send_to(self.doc, text, images, self.effort, self.json_schema)

    def send_to(
        self,
        doc: ChatDoc,
        text: str,
        images: Sequence[Picture] = (),
        effort: ReasoningEffort | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> bool:
        """Send a user message in conversation `doc`, shown or not (a queued message), with
        the effort and schema chosen for it; False when it cannot be sent now."""
        if self.busy or not (text.strip() or images) or not self.answers(doc.endpoint):
            return False
        if not doc.turns and doc.title == "New chat":
            # the user's words, not the attached documents (an image alone: its name)
            doc.title = title_of(text if text.strip() else images[0].name or "Image")
        version = Version(text, effort, json_schema, images=remember_images(images))
        doc.turns.append(Turn([version]))
        self.persist(doc=doc)
        self._keep_images(version, doc=doc.id)
        self.refresh_list()  # its title, and newest first
        self._shown(doc)
        self._start(len(doc.turns) - 1, doc=doc)
        return True

    def regenerate(self, turn_index: int | None = None, doc: ChatDoc | None = None) -> bool:
        """A new reply for the turn (the last by default) of `doc` (default: the selected
        conversation; another: a queued action); the old one stays as an alternative."""
        doc = doc or self.doc
        if self.busy or not doc.turns or not self.answers(doc.endpoint):
            return False
        index = len(doc.turns) - 1 if turn_index is None else turn_index
        doc.choose_version(index, doc.turns[index].chosen)
        del doc.turns[index + 1 :]
        self._shown(doc)
        self._start(index, doc=doc)
        return True

    def edit(self, turn_index: int, text: str, doc: ChatDoc | None = None) -> bool:
        """Resend turn `turn_index` of `doc` (as `regenerate`) with new text (and the same
        images); the old version and its branch are kept."""
        doc = doc or self.doc
        images = doc.turns[turn_index].version.images
        if self.busy or not (text.strip() or images) or not self.answers(doc.endpoint):
            return False
        version = doc.edit(turn_index, text)
        version.images = images  # the edited message still shows its images
        self.persist(doc=doc)
        self._keep_images(version, doc=doc.id)
        self._shown(doc)
        self._start(turn_index, doc=doc)
        return True

    def _shown(self, doc: ChatDoc) -> None:
        if doc is self.doc:  # the view draws it again
            self.docChanged.emit()

    def _keep_images(self, version: Version, reply: Reply | None = None, doc: str = "") -> None:
        """The version's images (with `reply`: those its tools returned) kept with conversation
        `doc` (default: the selected one) on the store's thread, after what carries them is
        saved; what could not be kept is said."""
        keep = keeping(version, reply, doc or self.doc.id)
        if keep is not None:
            self._io(keep, lambda said: self.notice.emit(said) if said else None)

    def continue_reply(self, doc: ChatDoc | None = None) -> bool:
        """Let the model go on from where the last reply of `doc` (as `regenerate`) stopped,
        was cut or failed: its tokens so far follow the prompt and the new ones are appended
        to the same reply."""
        doc = doc or self.doc
        if self.busy or not doc.turns or not self.answers(doc.endpoint):
            return False
        index = len(doc.turns) - 1
        reply = doc.turns[index].version.reply
        if reply is None or not reply.continuable:
            return False
        while reply.segments and reply.segments[-1].kind in ("notice", "error"):
            reply.segments.pop()
        reply.state, reply.error = "streaming", ""
        self._start(index, resume=reply, doc=doc)
        return True

    def choose_reply(self, turn_index: int, chosen: int) -> None:
        version = self.doc.turns[turn_index].version
        if not self.busy and 0 <= chosen < len(version.replies):
            version.chosen = chosen
            self.persist()
            self.docChanged.emit()

    def choose_version(self, turn_index: int, chosen: int) -> None:
        if not self.busy:
            self.doc.choose_version(turn_index, chosen)
            self.persist()
            self.docChanged.emit()

    def stop(self) -> None:
        """Stop what holds the window (a turn, a compaction), whichever chat it is in."""
        if self._cancel is not None:
            self._cancel.set()
        self.approvals.stop()

    def stop_shown(self) -> None:
        """The window's Stop and Esc: stop only what streams in the selected conversation;
        another chat's answer goes on."""
        if self.shows_answer:
            self.stop()

    def decide(
        self,
        call_id: str,
        allow: bool,
        arguments: dict[str, Any] | None = None,
        remember: Mode | None = None,
    ) -> None:
        """The user's answer on a tool card."""
        self.approvals.decide(call_id, allow, arguments, remember)

    def _start(
        self, turn_index: int, resume: Reply | None = None, doc: ChatDoc | None = None
    ) -> None:
        cancel = self.hold(doc or self.doc)
        self._task = asyncio.ensure_future(self._run(turn_index, cancel, resume))

    async def wait(self) -> None:
        """Until the running turn (if any) ends."""
        if self._task is not None:
            await asyncio.shield(self._task)

    # --- one turn ----------------------------------------------------------------------

    def _policy(self, loop: asyncio.AbstractEventLoop, doc_id: str) -> ApprovalPolicy:
        bridge = self.host.bridge

        def ask(call: PendingCall) -> Answer:  # on the engine thread: the card answers
            stopped = self._cancel is None or self._cancel.is_set()
            return bridge.ask(loop, self.approvals.wait(call, stopped))

        return self.approvals.policy(doc_id, ask)

    async def _run(
        self, turn_index: int, cancel: threading.Event, resume: Reply | None = None
    ) -> None:
        doc = self.answering or self.doc
        version = doc.turns[turn_index].version
        loop = asyncio.get_running_loop()
        # what a loaded conversation has not read yet is read on the store's thread
        await self.stored(partial(read_stored, doc, turn_index, resume))
        who = answerer(self.host, self.remote, doc.endpoint)  # the model or endpoint
        reply, prefix, kept = reply_for(version, resume, who)
        policy = self._policy(loop, doc.id) if doc.tools else None
        prefix_ids = prefix if resume is not None else None
        spec = turn_spec(self, doc, turn_index, (prefix_ids, kept), policy, cancel)

        self.painter.streaming = (version, reply)
        self.persist(version, reply, doc=doc)
        if self.shows_answer:
            self.replyStarted.emit(turn_index)
        state = TurnState(doc, reply)
        state.resume = dict(reply.open_segments) if resume is not None else None
        self._builder = state.builder
        try:
            async for event in self.host.bridge.stream(partial(turn_events, spec)):
                on_event(self, turn_index, reply, state, event)
        finally:
            self._finish(turn_index, version, reply, state, cancel)

    def _finish(
        self, turn: int, version: Version, reply: Reply, state: TurnState, cancel: threading.Event
    ) -> None:
        """The turn ended (answered, stopped, failed): the reply's state said and saved."""
        self.painter.flush()
        worker = self.host.worker
        if worker is not None:  # llama.cpp's own lines
            reply.debug.events.extend(f"llama.cpp: {line}" for line in worker.take_log())
        builder = state.builder
        reply.open_segments = dict(builder.segments)
        self._builder, self.last_builder = None, builder
        if cancel.is_set() and reply.state in ("streaming", "incomplete"):
            reply.state = "stopped"
        elif reply.state == "streaming":
            reply.state = "done"
        if cancel.is_set() and reply.state == "stopped":
            notice = Segment("notice", "Stopped. The partial answer is kept.", complete=True)
            self._add(turn, reply, notice)
        self.persist(version, reply, doc=state.doc)
        self._keep_images(version, reply, state.doc.id)  # the images its tools returned
        self.painter.streaming = None
        shown = self.shows_answer
        self.release()
        if shown:
            self.debugChanged.emit(turn)  # its record's last lines (llama.cpp's), state final
            self.replyFinished.emit(turn)
        self.refresh_list()

    def _add(self, turn: int, reply: Reply, segment: Segment) -> int:
        self.painter.flush()
        reply.segments.append(segment)
        index = len(reply.segments) - 1
        if self.shows_answer:
            self.segmentAdded.emit(turn, index)
        return index

    def close(self) -> None:
        self.queue.close()  # what was queued is not sent (`send_queue.py`)
        self.stop()
        if self.painter.streaming is not None:
            self.persist(*self.painter.streaming, doc=self.answering)
        self._closed = True
        self._writer.shutdown(wait=True)
        self.tools.close()


__all__ = ["FLUSH_MS", "ChatController", "Mode", "PluginIdentity", "SchemaError", "check_schema"]
