"""A user turn with tools on a chat session: the turn loop driven by the real engine.

Guarantees: the conversation's developer message declares exactly the registry's tools; with a
Harmony model each generation is constrained so tool arguments follow their schemas; the
first generation honours `tool_choice`, later ones are `auto`; the chain's analysis stays in
every follow-up prompt; every call's audit record comes back in the `TurnResult`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from app.domain.messages import Conversation, DeveloperContent, Message, Role
from app.engine.chat import ChatEvent, ChatSession
from app.engine.constraint import ToolChoice, harmony_constraint
from app.engine.tool_runner import Approve, allow_all, run_calls
from app.engine.turn_loop import CallOutcome, Generate, Generated, TurnResult, turn_loop
from app.harmony import encoding as enc
from app.templates.harmony import HarmonyTemplate
from app.tools.registry import ToolRegistry


@dataclass(frozen=True)
class ToolsRan:
    """The outcomes of one batch of calls, as the model will read them."""

    outcomes: tuple[CallOutcome, ...]


def with_tools(conversation: Conversation, registry: ToolRegistry) -> Conversation:
    """The conversation whose developer message declares the registry's tools (one is added)."""
    namespaces = registry.namespaces() or None
    messages = list(conversation.messages)
    for i, m in enumerate(messages):
        if m.author.role is Role.DEVELOPER and isinstance(m.content[0], DeveloperContent):
            dev = m.content[0].model_copy(update={"tools": namespaces})
            messages[i] = m.model_copy(update={"content": (dev, *m.content[1:])})
            return Conversation(messages=tuple(messages))
    at = 1 if messages and messages[0].author.role is Role.SYSTEM else 0
    messages.insert(at, Message.of(Role.DEVELOPER, DeveloperContent(tools=namespaces)))
    return Conversation(messages=tuple(messages))


def run_tool_turn(
    session: ChatSession,
    text: str,
    registry: ToolRegistry,
    *,
    approve: Approve = allow_all,
    tool_choice: ToolChoice = "auto",
    max_calls: int = 8,
    cancel: threading.Event | None = None,
) -> Iterator[ChatEvent | ToolsRan | TurnResult]:
    """Send `text` and run the tool loop to an answer; the last event is the `TurnResult`."""
    conversation = with_tools(
        session.conversation.with_message(Message.of(Role.USER, text)), registry
    )
    loop = turn_loop(conversation, registry, max_calls=max_calls)
    schemas = {t.name: t.parameters for t in registry if t.namespace == "functions"}
    action = next(loop)
    first = True
    try:
        while True:
            if isinstance(action, Generate):
                constraint = None
                if isinstance(session.template, HarmonyTemplate) and schemas:
                    choice = tool_choice if first else "auto"
                    constraint = harmony_constraint(
                        None,
                        tools=schemas,
                        tool_choice=choice,
                        thinking_budget=session.thinking_budget,
                    )
                first = False
                out = yield from session.generate(
                    action.conversation, constraint=constraint, cancel=cancel
                )
                if out.failed is not None:
                    session.conversation = action.conversation.with_messages(out.messages)
                    return
                action = loop.send(Generated(tuple(out.messages), called=out.stop_id == enc.CALL))
            else:
                outcomes = run_calls(action.calls, approve=approve, cancel=cancel)
                yield ToolsRan(tuple(outcomes))
                action = loop.send(outcomes)
    except StopIteration as stop:
        result: TurnResult = stop.value
        session.conversation = result.conversation
        yield result
