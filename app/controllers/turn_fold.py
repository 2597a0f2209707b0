"""A window turn's events folded into its reply: what the chat controller does with each event
the engine thread sends back.

Guarantees: every event goes through the one reply builder (`ReplyBuilder.apply`) and its
changes are painted in order by the chat's `ReplyPainter`; what is the window's own is done
here and nowhere else — the model's vocabulary kept for the debug pane, the turn's messages
kept on the reply, a crash of the engine thread made the turn's failure (`TurnFailed`,
`E-INTERNAL`), a remote endpoint's wait or retry and a compaction said as a notice, the
timings of a generation said with `statusChanged`, the work before a first token (a prompt
read, an image encoded) said with `progressed`; a tool call waiting in a conversation that
is not shown is said in a notice naming that conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import SignalInstance

from app.controllers.bridge import StreamCrashed
from app.controllers.compactions import compacting_said
from app.controllers.model_host import ModelHost
from app.controllers.reply_painter import ReplyPainter
from app.controllers.turn_inputs import TurnState
from app.domain.events import (
    Compacted,
    Compacting,
    GenerationDone,
    JsonRetried,
    MessageDone,
    ParseIssue,
    PromptRendered,
    RequestSent,
    ResponseReceived,
    SessionEvent,
    TurnCommitted,
    TurnEvent,
    TurnFailed,
    VocabularyRead,
)
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.reply import Added
from app.errors import ErrorCode

if TYPE_CHECKING:
    from app.domain.history import ChatDoc, Reply, Segment


class FoldingChat(Protocol):
    """What folding needs of the chat controller (passed in: never imported here)."""

    host: ModelHost
    painter: ReplyPainter
    token_table: tuple[bytes, ...]
    special_tokens: dict[int, bytes]
    vocab_of: object

    @property
    def shows_answer(self) -> bool: ...
    @property
    def notice(self) -> SignalInstance: ...
    @property
    def statusChanged(self) -> SignalInstance: ...
    @property
    def debugChanged(self) -> SignalInstance: ...
    @property
    def progressed(self) -> SignalInstance: ...


def on_event(
    chat: FoldingChat,
    turn: int,
    reply: Reply,
    state: TurnState,
    event: SessionEvent | StreamCrashed,
) -> None:
    """What the window keeps of the session (the vocabulary, the turn's messages) is kept
    here; a crash of the engine thread is the turn's failure; the rest is the reply's."""
    match event:
        case VocabularyRead():
            chat.token_table, chat.special_tokens = event.table, dict(event.special)
            chat.vocab_of = chat.host.backend
        case TurnCommitted():
            reply.messages = tuple(event.conversation.messages[event.start :])
        case StreamCrashed():
            fold(chat, turn, reply, state, TurnFailed(event.message, ErrorCode.INTERNAL))
        case _:
            fold(chat, turn, reply, state, event)


def fold(chat: FoldingChat, turn: int, reply: Reply, state: TurnState, event: TurnEvent) -> None:
    """Fold the event into the reply with the one reply builder, then paint its changes;
    what is the window's own (status, notices, where a continued reply goes on) is done
    here."""
    _before(chat, reply, state, event)
    for change in state.builder.apply(event):
        chat.painter.paint(turn, change)
        if isinstance(change, Added) and not chat.shows_answer:
            _say_waiting(chat, state.doc, reply.segments[change.index])
    match event:
        case RequestSent() | ResponseReceived() | ParseIssue():
            chat.painter.debug_grew(turn)
        case PromptRead():
            chat.progressed.emit(turn, event)  # the transcript says it (`reading.py`)
        case ImageEncoding():
            chat.progressed.emit(turn, event)
        case GenerationDone():
            endpoint = state.doc.endpoint
            where = {"endpoint": endpoint} if endpoint else {"budget": reply.debug.budget}
            timings = {**reply.debug.timings, "n_ctx": chat.host.n_ctx, **where}
            chat.statusChanged.emit(timings)
            if chat.shows_answer:
                chat.debugChanged.emit(turn)


def _before(chat: FoldingChat, reply: Reply, state: TurnState, event: TurnEvent) -> None:
    """What an event means to the window before the builder folds it."""
    match event:
        case PromptRendered():
            state.builder.segments, state.resume = state.resume or {}, None
            reply.debug.sampling = str(chat.host.sampling)
        case JsonRetried():  # the next generation goes on with the same answer segment
            state.resume = dict(state.builder.segments)
        case MessageDone():
            chat.painter.message_ended()  # a message boundary: saved at the next flush
        case ParseIssue(code=ErrorCode.NETWORK):
            chat.notice.emit(event.message)  # a remote endpoint waits or retries: say so
        case Compacting():
            chat.notice.emit(compacting_said(event))  # a summary is being written
        case Compacted():
            chat.notice.emit(f"Compacted: {event.compaction.said()}.")  # in its place


def _say_waiting(chat: FoldingChat, doc: ChatDoc, segment: Segment) -> None:
    """A tool call in a conversation not shown waits for the user: say where."""
    if segment.kind == "tool" and segment.data.get("state") == "pending":
        chat.notice.emit(f"“{doc.title}” waits for your approval of a tool call.")


__all__ = ["FoldingChat", "fold", "on_event"]
