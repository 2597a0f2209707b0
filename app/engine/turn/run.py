"""`run_turn`: the only turn driver. Every frontend — the window, the terminal chat, replay —
asks for a turn with a `TurnRequest` and folds the events it yields with the one reply builder.

Guarantees: the same request gives the same events whoever drives it: a local or a remote
session; with tools (the sans-I/O turn loop, approval, deadlines and the audit log beside it)
or without; in JSON mode (constraint and verdict) or not; a fresh turn or the continuation of a
cut answer (under the same JSON mode); the reasoning effort is recorded on the conversation as
the Harmony format says. Tools chosen for a model whose template has no tool-call format are
said (an issue the reply shows; a failed turn when `tool_choice` needs a call), never dropped
silently. When it returns, `session.conversation` holds the turn.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from app.constrain.constraint import ResponseFormat, ToolChoice
from app.domain.events import ParseIssue, TurnEvent, TurnFailed
from app.domain.messages import Conversation, ImageContent, Message, ReasoningEffort, user_message
from app.engine.session import Session
from app.engine.turn.tools import run_tool_turn
from app.errors import ErrorCode
from app.tools.api import ToolContext
from app.tools.calls import Approve, allow_all
from app.tools.registry import ToolRegistry


@dataclass(frozen=True)
class Resume:
    """Continue a cut answer: the conversation up to it, and the ids it had produced."""

    conversation: Conversation
    prefix: Sequence[int]


@dataclass(frozen=True)
class TurnRequest:
    """One user turn, as any frontend asks for it."""

    text: str
    effort: ReasoningEffort | None = None
    response_format: ResponseFormat | None = None
    tools: ToolRegistry | None = None  # None: no tool loop
    approve: Approve = allow_all
    tool_choice: ToolChoice = "auto"
    max_calls: int = 8
    context: ToolContext | None = None
    resume: Resume | None = None
    max_tokens: int | None = None
    images: tuple[ImageContent, ...] = ()  # shown to the model before `text`

    @property
    def message(self) -> Message:
        """The user's message this turn sends."""
        return user_message(self.text, self.images)


def run_turn(
    session: Session, request: TurnRequest, cancel: threading.Event | None = None
) -> Iterator[TurnEvent]:
    """The turn's events, in order (see the module guarantees)."""
    if request.tools is not None and len(request.tools) and not session.capabilities.tools:
        names = ", ".join(sorted(t.qualified_name for t in request.tools))
        said = f"This model's chat template has no tool-call format: its tools ({names}) were"
        if request.tool_choice != "auto" and request.tool_choice != "none":
            reason = f"{said} not offered, and tool_choice {request.tool_choice!r} needs a call."
            yield TurnFailed(reason, ErrorCode.TOOLS_UNAVAILABLE)
            return
        yield ParseIssue(ErrorCode.TOOLS_UNAVAILABLE, f"{said} not offered to it.")
        request = dataclasses.replace(request, tools=None, tool_choice="auto")
    if request.resume is not None:
        yield from _resume(session, request, cancel)
    elif request.tools is not None:
        if request.effort is not None:
            session.conversation = session.with_effort(session.conversation, request.effort)
        yield from run_tool_turn(
            session,
            request.message,
            request.tools,
            approve=request.approve,
            tool_choice=request.tool_choice,
            max_calls=request.max_calls,
            cancel=cancel,
            context=request.context,
        )
    else:
        yield from session.send(
            request.message,
            reasoning_effort=request.effort,
            cancel=cancel,
            response_format=request.response_format,
            tool_choice=request.tool_choice,
        )


def _resume(
    session: Session, request: TurnRequest, cancel: threading.Event | None
) -> Iterator[TurnEvent]:
    assert request.resume is not None
    conversation = request.resume.conversation
    if request.effort is not None:
        conversation = session.with_effort(conversation, request.effort)
    out = yield from session.resume(  # JSON mode and its check hold on Continue
        conversation, request.resume.prefix, max_tokens=request.max_tokens, cancel=cancel,
        response_format=request.response_format,
    )  # fmt: skip
    session.conversation = conversation.with_messages(out.messages)


__all__ = ["Resume", "TurnRequest", "run_turn"]
