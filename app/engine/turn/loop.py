"""The turn loop, written once as a sans-I/O generator: generate → calls → replies → generate.

The loop yields `Generate` (run the model on this conversation; send back what it produced)
and `RunCalls` (ask approval for and run these calls; send back one `CallOutcome` per call id),
and returns the final `TurnResult`. The GUI, the CLI and the tests drive the same loop.

Guarantees: a call to an unknown tool, arguments that are not JSON or do not match the schema,
a denied call, a tool error, a timeout and a cancel all reach the model as a tool message
holding an error envelope `{"ok": false, "error": {"code", "message"}}`, never as a crash;
replies are matched by call id, whatever order they finish in; consecutive calls are capped
per turn, and hitting the cap ends the turn with a clear reason; the analysis of the chain
stays in the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.events import (
    CallOutcome,
    CallRecord,
    TurnResult,
)
from app.domain.messages import Author, Conversation, Message, Role, TextContent
from app.domain.visibility import is_tool_recipient
from app.errors import ErrorCode
from app.tools.api import Tool, ValidationError
from app.tools.calls import PendingCall
from app.tools.registry import ToolRegistry


@dataclass(frozen=True)
class Generate:
    """Run the model on `conversation`; send back a `Generated`."""

    conversation: Conversation


@dataclass(frozen=True)
class Generated:
    messages: tuple[Message, ...]
    called: bool  # the generation ended with <|call|>


@dataclass(frozen=True)
class RunCalls:
    """Ask approval for and run these calls (concurrently); send back their `CallOutcome`s."""

    calls: tuple[PendingCall, ...]


def envelope(outcome: CallOutcome) -> str:
    """The tool reply the model reads."""
    if outcome.ok:
        return json.dumps({"ok": True, "content": outcome.content}, ensure_ascii=False, default=str)
    error = {"code": outcome.error_code or "E-TOOL-ERROR", "message": outcome.error or ""}
    return json.dumps({"ok": False, "error": error}, ensure_ascii=False)


def _reply(call: Message, tool: Tool | None, outcome: CallOutcome) -> Message:
    """The tool message answering `call`, on the call's channel (built-ins: `analysis`)."""
    text = envelope(outcome)
    if outcome.ok and tool is not None and tool.text_reply and isinstance(outcome.content, str):
        text = outcome.content  # what gpt-oss was trained to read from python and browser
    return Message(
        author=Author(role=Role.TOOL, name=call.recipient or ""),
        content=(TextContent(text=text),),
        channel=call.channel or "commentary",
        recipient="assistant",
    )


def _code(text: str) -> dict[str, Any]:
    """A code tool's arguments: the body itself (Harmony), or `{"code": …}` (a text model's
    JSON call)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"code": text}
    if isinstance(value, dict) and isinstance(value.get("code"), str) and len(value) == 1:
        return value
    return {"code": text}


def _check(call_id: str, message: Message, registry: ToolRegistry) -> PendingCall | CallOutcome:
    tool = registry.get(message.recipient or "")
    if tool is None:
        known = ", ".join(sorted(t.qualified_name for t in registry)) or "none"
        return CallOutcome(
            call_id,
            False,
            error_code=ErrorCode.CALL_SCHEMA.value,
            error=f"there is no tool {message.recipient!r}; available: {known}",
        )
    try:
        raw = _code(message.text) if tool.body == "code" else json.loads(message.text)
        if not isinstance(raw, dict):
            raise ValueError("the arguments must be a JSON object")
        arguments = tool.parse_arguments(raw).model_dump()
    except (ValueError, ValidationError) as exc:
        return CallOutcome(
            call_id,
            False,
            error_code=ErrorCode.CALL_SCHEMA.value,
            error=f"invalid arguments for {tool.qualified_name}: {exc}",
        )
    return PendingCall(call_id, tool, arguments)


def turn_loop(
    conversation: Conversation, registry: ToolRegistry, *, max_calls: int = 8
) -> Generator[Generate | RunCalls, Any, TurnResult]:
    """Drive one user turn to its answer (see the module guarantees)."""
    records: list[CallRecord] = []
    made = 0
    while True:
        generated: Generated = yield Generate(conversation)
        conversation = conversation.with_messages(generated.messages)
        calls = [m for m in generated.messages if is_tool_recipient(m.recipient)]
        if not calls or not generated.called:
            answered = any(m.channel == "final" for m in generated.messages)
            return TurnResult(conversation, "answer" if answered else "no answer", tuple(records))
        if made + len(calls) > max_calls:
            return TurnResult(conversation, "loop cap", tuple(records))
        made += len(calls)
        checked = [
            _check(f"call_{made - len(calls) + i + 1}", m, registry) for i, m in enumerate(calls)
        ]
        pending = tuple(c for c in checked if isinstance(c, PendingCall))
        outcomes: dict[str, CallOutcome] = {}
        if pending:
            answers: Sequence[CallOutcome] = yield RunCalls(pending)
            outcomes = {o.call_id: o for o in answers}
        for message, check in zip(calls, checked, strict=True):
            if isinstance(check, PendingCall):
                outcome = outcomes.get(check.call_id) or CallOutcome(
                    check.call_id,
                    False,
                    error_code=ErrorCode.TOOL_CANCELLED.value,
                    error="no result came back",
                )
            else:
                outcome = check
            records.append(
                CallRecord(outcome.call_id, message.recipient or "", message.text, outcome)
            )
            tool = registry.get(message.recipient or "")
            conversation = conversation.with_message(_reply(message, tool, outcome))
