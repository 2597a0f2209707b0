"""The turn loop, written once as a sans-I/O generator: generate → calls → replies → generate.

The loop yields `Generate` (run the model on this conversation; send back what it produced)
and `RunCalls` (ask approval for and run these calls; send back one `CallOutcome` per call id),
and returns the final `TurnResult`. The GUI, the CLI and the tests drive the same loop.
Outcomes come back as they are (`CallOutcome`: the loop reads them within a share of
characters, `tool_results.Budget.characters`) or as the driver fitted them to the model's
context (`tool_results.Answer`); either way the tool message holds what the model reads, with
the images it carries after its text, and the turn's records the whole outcome, for the audit.

Guarantees: a call to an unknown tool, arguments that are not JSON or do not match the schema,
a denied call, a tool error, a timeout and a cancel all reach the model as a tool message
holding an error envelope `{"ok": false, "error": {"code", "message"}}`, never as a crash;
arguments that do not fit the schema (E-CALL-SCHEMA, read here or by the tool) are sent back
asking once per tool and turn for a repaired call (`call_repair.py`);
replies are matched by call id, whatever order they finish in; consecutive calls are capped
per turn, and hitting the cap ends the turn with a clear reason; the analysis of the chain
stays in the conversation.
"""

from __future__ import annotations

import dataclasses
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
from app.engine.turn.tool_results import Answer, Budget, answers, as_is
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


def _reply(call: Message, tool: Tool | None, answer: Answer) -> Message:
    """The tool message answering `call`, on the call's channel (built-ins: `analysis`): the
    outcome as the model reads it, then the images it carries."""
    outcome = answer.read
    text = envelope(outcome)
    if outcome.ok and tool is not None and tool.text_reply and isinstance(outcome.content, str):
        text = outcome.content  # what gpt-oss was trained to read from python and browser
    return Message(
        author=Author(role=Role.TOOL, name=call.recipient or ""),
        content=(TextContent(text=text), *answer.images),
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
        from app.engine.turn.call_repair import said_of

        why = said_of(exc) if isinstance(exc, ValidationError) else str(exc)
        return CallOutcome(
            call_id,
            False,
            error_code=ErrorCode.CALL_SCHEMA.value,
            error=f"invalid arguments for {tool.qualified_name}: {why}",
        )
    return PendingCall(call_id, tool, arguments)


def turn_loop(
    conversation: Conversation, registry: ToolRegistry, *, max_calls: int = 8
) -> Generator[Generate | RunCalls, Any, TurnResult]:
    """Drive one user turn to its answer (see the module guarantees)."""
    from app.engine.turn.call_repair import Repairs

    records: list[CallRecord] = []
    repairs = Repairs()  # calls that did not fit their schema, per tool
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
        got: dict[str, Answer] = {}
        if pending:
            sent: Sequence[CallOutcome | Answer] = yield RunCalls(pending)
            got = {a.call_id: a for a in _read(sent)}
        for message, check in zip(calls, checked, strict=True):
            if isinstance(check, PendingCall):
                answer = got.get(check.call_id) or as_is(_unanswered(check.call_id))
            else:
                answer = as_is(check)
            whole = answer.whole
            records.append(CallRecord(whole.call_id, message.recipient or "", message.text, whole))
            tool = registry.get(message.recipient or "")
            answer = dataclasses.replace(answer, read=repairs.read(answer.read, tool))
            conversation = conversation.with_message(_reply(message, tool, answer))


def _read(sent: Sequence[CallOutcome | Answer]) -> list[Answer]:
    """What the driver sent back, each as the model reads it: outcomes it did not fit are
    read within the characters' share (`Budget.characters`)."""
    raw = [o for o in sent if isinstance(o, CallOutcome)]
    fitted = iter(answers(raw, Budget.characters(), {}))
    return [next(fitted) if isinstance(o, CallOutcome) else o for o in sent]


def _unanswered(call_id: str) -> CallOutcome:
    return CallOutcome(
        call_id, False, error_code=ErrorCode.TOOL_CANCELLED.value, error="no result came back"
    )
