"""What the window's turn runs on the engine thread: a session for the conversation (the model
on this computer or its remote endpoint), then `run_turn` with the turn's request.

Guarantees: an offline conversation never opens a remote session (the turn fails with why);
a missing endpoint or key is the turn's failure, said; the vocabulary crosses to the GUI thread
once (`VocabularyRead`, for the debug pane); the session keeps the conversation's overflow
policy (else the settings' default); the last event is `TurnCommitted` with the conversation the
turn left.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from app.constrain.constraint import ResponseFormat
from app.controllers.model_host import ModelHost
from app.controllers.remote_host import EndpointError, RemoteHost
from app.domain.budget import Overflow
from app.domain.events import SessionEvent, TurnCommitted, TurnFailed, VocabularyRead
from app.domain.messages import Message
from app.engine.session import Session
from app.engine.turn.run import Resume, TurnRequest, run_turn
from app.errors import ErrorCode, HarmonyDeskError
from app.settings import load_settings
from app.tools.registry import ToolRegistry


@dataclass(frozen=True)
class TurnSpec:
    """Everything the engine thread needs for one turn of the window (plain values)."""

    host: ModelHost
    remote: RemoteHost | None
    endpoint: str | None
    offline: bool
    history: list[Message]
    request: TurnRequest
    kept: Sequence[Message]  # a continued reply's earlier messages
    prefix: Sequence[int] | None  # a continued reply's ids (None: a fresh turn)
    tools: Callable[[], ToolRegistry] | None
    need_vocab: bool
    cancel: threading.Event
    top_logprobs: int = 0  # > 0: tokens come scored, with this many alternatives (debug pane)
    overflow: Overflow | None = None  # the conversation's policy (None: the settings' default)
    conversation_id: str = ""  # the history's id: the model's KV state is kept for it


def _session(spec: TurnSpec, response_format: ResponseFormat | None) -> Session | TurnFailed:
    """The turn's session, or why there is none."""
    if spec.endpoint is None:
        local = spec.host.session(
            max_tokens=spec.request.max_tokens, response_format=response_format
        )
        local.reserved = True  # the window's turn: never queued behind the server's clients
        return local
    if spec.offline or spec.remote is None:
        return TurnFailed(
            "this conversation is marked offline: it never sends anything to a remote"
            f" endpoint ({spec.endpoint}); turn Offline off, or answer on this computer",
            ErrorCode.OFFLINE,
        )
    try:
        return spec.remote.session(spec.endpoint, max_tokens=spec.request.max_tokens or 1024)
    except EndpointError as exc:
        return TurnFailed(exc.message, exc.code)


def turn_events(spec: TurnSpec) -> Iterator[SessionEvent]:
    """The turn's events, run on the engine thread (see the module guarantees)."""
    request = spec.request
    session = _session(spec, request.response_format)
    if isinstance(session, TurnFailed):
        yield session
        return
    session.overflow = spec.overflow or Overflow(load_settings().overflow)
    session.conversation_id = spec.conversation_id
    if session.capabilities.vocabulary:
        session.top_logprobs = spec.top_logprobs
        if spec.need_vocab:
            yield VocabularyRead(tuple(session.token_table()), spec.host.special_tokens())
    session.conversation = session.conversation.with_messages(spec.history)
    start = len(session.conversation.messages) + 1
    if spec.prefix is not None:
        asked = [request.message, *spec.kept]
        resume = Resume(session.conversation.with_messages(asked), spec.prefix)
        request = dataclasses.replace(request, resume=resume)
    elif spec.tools is not None:
        try:  # an MCP server that cannot start, a plugin gone: said in the conversation
            request = dataclasses.replace(request, tools=spec.tools())
        except HarmonyDeskError as exc:
            yield TurnFailed(f"the conversation's tools are not ready: {exc.message}", exc.code)
            return
    yield from run_turn(session, request, spec.cancel)
    yield TurnCommitted(session.conversation, start)


__all__ = ["TurnSpec", "turn_events"]
