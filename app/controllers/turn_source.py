"""What the window's turn runs on the engine thread: a session for the conversation (the model
on this computer or its remote endpoint), then `run_turn` with the turn's request.

Guarantees: an offline conversation never opens a remote session (the turn fails with why);
a missing endpoint or key is the turn's failure, said; the vocabulary crosses to the GUI thread
once (`VocabularyRead`, for the debug pane); nothing here sets a session's attributes: the
turn's knobs travel in its `TurnRequest`; the last event is `TurnCommitted` with the
conversation the turn left. `compaction_events` compacts a conversation at once, with no
turn (Compact now): only the compaction's own events (`Compacting`, then `Compacted` or the
`ParseIssue` that says why not; none when there is nothing to compact yet).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from app.controllers.model_host import ModelHost
from app.controllers.remote_host import EndpointError, RemoteHost
from app.domain.events import SessionEvent, TurnCommitted, TurnFailed, VocabularyRead
from app.domain.messages import Message
from app.engine.session import Session
from app.engine.turn.compaction import compact
from app.engine.turn.run import TurnRequest, run_turn
from app.errors import ErrorCode, HarmonyDeskError
from app.tools.registry import ToolRegistry


@dataclass(frozen=True)
class TurnSpec:
    """Everything the engine thread needs for one turn of the window (plain values); the
    turn's knobs are in `request.generation`, built once by `turn_inputs.turn_spec`."""

    host: ModelHost
    remote: RemoteHost | None
    endpoint: str | None
    offline: bool
    history: list[Message]
    request: TurnRequest  # its `message` the turn's user message
    kept: Sequence[Message]  # a continued reply's earlier messages
    continued: bool  # the reply is continued from its ids (`request.generation.prefix`)
    tools: Callable[[], ToolRegistry] | None
    need_vocab: bool
    cancel: threading.Event


def _session(spec: TurnSpec) -> Session | TurnFailed:
    """The turn's session, or why there is none."""
    if spec.endpoint is None:
        return spec.host.session()
    if spec.offline or spec.remote is None:
        return TurnFailed(
            "this conversation is marked offline: it never sends anything to a remote"
            f" endpoint ({spec.endpoint}); turn Offline off, or answer on this computer",
            ErrorCode.OFFLINE,
        )
    try:
        asked = spec.request.generation.max_tokens or 1024
        return spec.remote.session(spec.endpoint, max_tokens=asked)
    except EndpointError as exc:
        return TurnFailed(exc.message, exc.code)


def turn_events(spec: TurnSpec) -> Iterator[SessionEvent]:
    """The turn's events, run on the engine thread (see the module guarantees)."""
    session = _session(spec)
    if isinstance(session, TurnFailed):
        yield session
        return
    if session.capabilities.vocabulary and spec.need_vocab:
        yield VocabularyRead(tuple(session.token_table()), spec.host.special_tokens())
    conversation = session.conversation.with_messages(spec.history)
    start = len(conversation.messages) + 1
    request = dataclasses.replace(spec.request, conversation=conversation)
    if spec.continued:
        asked = conversation.with_messages([*_message(request), *spec.kept])
        request = dataclasses.replace(request, conversation=asked, message=None)
    elif spec.tools is not None:
        try:  # an MCP server that cannot start, a plugin gone: said in the conversation
            request = dataclasses.replace(request, tools=spec.tools())
        except HarmonyDeskError as exc:
            yield TurnFailed(f"the conversation's tools are not ready: {exc.message}", exc.code)
            return
    yield from run_turn(session, request, spec.cancel)
    yield TurnCommitted(session.conversation, start)


def compaction_events(spec: TurnSpec) -> Iterator[SessionEvent]:
    """Compact the conversation of `spec` at once (see the module guarantees), on the engine
    thread; `spec.request.generation` carries the knobs and the compaction carried forward."""
    session = _session(spec)
    if isinstance(session, TurnFailed):
        yield session
        return
    conversation = session.conversation.with_messages(spec.history)
    asked = spec.request.generation
    yield from compact(session, conversation, asked, asked.compaction, spec.cancel, force=True)


def _message(request: TurnRequest) -> list[Message]:
    return [request.message] if request.message is not None else []


__all__ = ["TurnSpec", "compaction_events", "turn_events"]
