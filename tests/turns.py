"""Tests' shorthand for a turn through the one driver: `send` (a user message, no tools) and
`tool_turn` (with a registry of tools run here), each a `TurnRequest` to `run_turn` with its
knobs in one `GenerationRequest`, as every frontend asks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from app.domain.events import TurnEvent
from app.domain.messages import Conversation, Message, user_message
from app.engine.request import GenerationRequest
from app.engine.session import Session
from app.engine.turn.run import TurnRequest, run_turn
from app.engine.turn.tools import run_tool_turn
from app.tools.audit import AuditLog
from app.tools.calls import allow_all
from app.tools.registry import ToolRegistry


def send(
    session: Session,
    text: str | Message,
    *,
    cancel: threading.Event | None = None,
    conversation: Conversation | None = None,
    **knobs: Any,
) -> Iterator[TurnEvent]:
    """`text` as the next user message of `session` (or of `conversation`), the events of its
    turn; `knobs` are the `GenerationRequest`'s fields."""
    message = text if isinstance(text, Message) else user_message(text)
    request = TurnRequest(GenerationRequest(**knobs), message=message, conversation=conversation)
    return run_turn(session, request, cancel)


def tool_turn(
    session: Session,
    text: str,
    registry: ToolRegistry,
    *,
    approve: Any = allow_all,
    max_calls: int = 8,
    cancel: threading.Event | None = None,
    audit: AuditLog | None = None,
    **knobs: Any,
) -> Iterator[TurnEvent]:
    """A user turn with `registry`'s tools run to an answer (the tool loop)."""
    conversation = session.conversation.with_message(user_message(text))
    return run_tool_turn(
        session,
        conversation,
        registry,
        GenerationRequest(**knobs),
        approve=approve,
        max_calls=max_calls,
        cancel=cancel,
        audit=audit,
    )


__all__ = ["send", "tool_turn"]
