"""A user turn with tools on a chat session: the turn loop driven by the real engine.

Guarantees: the conversation's developer message declares exactly the registry's tools; each
generation is constrained so tool arguments follow their schemas, local `$ref`s written in place
(`app/constrain/call_schema.py`); a schema the token mask cannot take allows any object, checked
once the call is read (repaired once, `loop.py`), and the turn says so first — one E-CALL-SCHEMA
notice per such tool, never a failed turn; the
first generation honours the request's `tool_choice`, later ones are `auto` (the same
`GenerationRequest` otherwise, the registry's tools declared in it); the chain's analysis stays in
every follow-up prompt; what a running call says of its progress (`ToolContext.report`) is
yielded as `ToolProgress` while the batch runs, before its `ToolsRan`; the batch's results
are fitted to the model's context (`tool_results`: a result past its share cut with a marker,
and a `ParseIssue` (E-CONTEXT) that says where the whole is kept; images shown to a model that
sees them, named to one that does not) before `ToolsRan` says them as the model reads them;
every call's audit record — the whole result — comes back in the `TurnResult` and is appended
to the tool audit log here, so the window, the terminal and any other driver audit.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import queue
import threading
from collections.abc import Generator, Iterator, Sequence

from app.constrain.constraint import CallSpec, enforceable
from app.domain.events import (
    CallOutcome,
    ParseIssue,
    ToolCallDecided,
    ToolCallRequested,
    ToolProgress,
    ToolsRan,
    TurnEvent,
    TurnResult,
)
from app.domain.messages import Conversation, Role, SystemContent
from app.engine.request import GenerationRequest
from app.engine.session import Session
from app.engine.turn.loop import Generate, Generated, turn_loop
from app.engine.turn.tool_results import Answer, answers, budget_of
from app.errors import ErrorCode
from app.tools.api import Tool, ToolContext
from app.tools.audit import AuditLog
from app.tools.calls import Approve, Decision, PendingCall, allow_all
from app.tools.registry import ToolRegistry
from app.tools.runner import described, run_decided

POLL_S = 0.05  # how often a running batch is looked at for progress


def with_tools(conversation: Conversation, registry: ToolRegistry) -> Conversation:
    """The conversation declaring the registry's tools: plugin namespaces in the developer
    message, the built-in `browser` and `python` in the system message."""
    system = registry.system_namespaces()
    if system or any(
        m.author.role is Role.SYSTEM and isinstance(m.content[0], SystemContent)
        for m in conversation.messages
    ):
        conversation = conversation.with_header(Role.SYSTEM, tools=system or None)
    return conversation.with_header(Role.DEVELOPER, tools=registry.namespaces() or None)


def _call_spec(t: Tool) -> CallSpec:
    code = t.body == "code"
    return CallSpec(t.qualified_name, t.channel, None if code else enforceable(t.parameters), code)


def _approved(
    calls: Sequence[PendingCall], approve: Approve
) -> Generator[ToolCallRequested | ToolCallDecided, None, list[Decision]]:
    """Ask for each call in turn, saying the request and the answer as events."""
    decisions = []
    for call in calls:
        name, risk = call.tool.qualified_name, call.tool.risk.value
        source = "" if call.tool.plugin == "built-in" else call.tool.plugin
        yield ToolCallRequested(call.call_id, name, call.arguments, risk, source)
        decision = approve(call)
        ran = decision.arguments if decision.arguments is not None else call.arguments
        yield ToolCallDecided(call.call_id, decision.allow, ran, described(decision, call))
        decisions.append(decision)
    return decisions


def _ran(
    calls: Sequence[PendingCall],
    decisions: Sequence[Decision],
    cancel: threading.Event | None,
    context: ToolContext | None,
) -> Generator[ToolProgress, None, list[CallOutcome]]:
    """Run the batch on a thread of its own, yielding its calls' progress as it comes."""
    heard: queue.SimpleQueue[ToolProgress] = queue.SimpleQueue()
    context = dataclasses.replace(context or ToolContext(call_id=""), progress=heard.put)
    pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tool-batch")
    try:
        batch = pool.submit(run_decided, calls, decisions, cancel=cancel, context=context)
        while True:
            cf.wait([batch], timeout=POLL_S)
            while not heard.empty():
                yield heard.get_nowait()
            if batch.done():
                return batch.result()
    finally:
        pool.shutdown(wait=False)


def _fitted(
    session: Session,
    asked: Conversation,
    calls: Sequence[PendingCall],
    outcomes: Sequence[CallOutcome],
    generation: GenerationRequest,
    audit: AuditLog,
) -> Generator[ParseIssue | ToolsRan, None, list[Answer]]:
    """The batch's outcomes as the model reads them, said (a cut one also as a notice)."""
    reserve = generation.max_tokens or session.max_tokens
    budget = budget_of(session, asked, reserve, generation.overflow, audit.path)
    read = answers(outcomes, budget, {c.call_id: c.tool.qualified_name for c in calls})
    for answer in read:
        if answer.said:
            yield ParseIssue(ErrorCode.CONTEXT, answer.said)
    yield ToolsRan(tuple(a.read for a in read))
    return read


def run_tool_turn(
    session: Session,
    conversation: Conversation,
    registry: ToolRegistry,
    generation: GenerationRequest,
    *,
    approve: Approve = allow_all,
    max_calls: int = 8,
    cancel: threading.Event | None = None,
    context: ToolContext | None = None,
    audit: AuditLog | None = None,
) -> Iterator[TurnEvent]:
    """Answer `conversation` (its user message last) and run the tool loop to an answer; the
    last event is the `TurnResult`. Every call is written to the audit log (`audit`, else the
    user's), whoever drives the turn."""
    audit = audit or AuditLog()
    loop = turn_loop(with_tools(conversation, registry), registry, max_calls=max_calls)
    from app.constrain.call_schema import call_schema  # JSON mode's planner: at the first turn

    held = {t.name: call_schema(t.parameters) for t in registry if t.namespace == "functions"}
    schemas = {name: h.schema for name, h in held.items()}
    for name, h in held.items():
        if h.reason:  # the user hears which tool's calls are checked only after
            yield ParseIssue(ErrorCode.CALL_SCHEMA, h.notice(f"functions.{name}"))
    calls = tuple(_call_spec(t) for t in registry if t.namespace != "functions")
    first = dataclasses.replace(generation, tools=schemas, calls=calls)
    later = dataclasses.replace(first, tool_choice="auto")
    action = next(loop)
    asked = conversation
    try:
        while True:
            if isinstance(action, Generate):
                out = yield from session.generate(action.conversation, first, cancel)
                first = later
                asked = action.conversation.with_messages(out.messages)
                if out.failed is not None:
                    session.conversation = asked
                    return
                action = loop.send(Generated(tuple(out.messages), called=out.called))
            else:
                decisions = yield from _approved(action.calls, approve)
                outcomes = yield from _ran(action.calls, decisions, cancel, context)
                read = yield from _fitted(session, asked, action.calls, outcomes, first, audit)
                action = loop.send(read)
    except StopIteration as stop:
        result: TurnResult = stop.value
        session.conversation = result.conversation
        if result.records:
            audit.append(result.records, context.conversation_id if context else "")
        yield result
