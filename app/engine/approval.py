"""Approval of tool calls: ask every time (default), allow for this conversation, always, deny.

Guarantees: a tool the user denied never runs; "allow for this conversation" lasts as long as
the policy object (one per conversation); the request shows the tool, its risk and the
arguments, which the user may replace before the call runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum

from app.engine.tool_runner import Decision
from app.engine.turn_loop import PendingCall


class Mode(StrEnum):
    ASK = "ask"
    ALLOW_CONVERSATION = "allow for this conversation"
    ALWAYS = "always allow"
    DENY = "deny"


Ask = Callable[[PendingCall], tuple[Mode | None, Decision]]


class ApprovalPolicy:
    """Per-tool approval modes for one conversation; `ask` is consulted in `ASK` mode."""

    def __init__(self, ask: Ask, modes: dict[str, Mode] | None = None) -> None:
        self.ask = ask
        self.modes: dict[str, Mode] = dict(modes or {})

    def __call__(self, call: PendingCall) -> Decision:
        mode = self.modes.get(call.tool.qualified_name, Mode.ASK)
        if mode is Mode.DENY:
            return Decision(False)
        if mode in (Mode.ALLOW_CONVERSATION, Mode.ALWAYS):
            return Decision(True)
        remember, decision = self.ask(call)
        if remember is not None:
            self.modes[call.tool.qualified_name] = remember
        return decision


def terminal_ask(read: Callable[[str], str]) -> Ask:
    """An `Ask` that prompts on a terminal: [y]es, [n]o, [a]llow for this chat, [e]dit arguments."""

    def ask(call: PendingCall) -> tuple[Mode | None, Decision]:
        shown = json.dumps(call.arguments, ensure_ascii=False)
        question = (
            f"Run {call.tool.qualified_name} ({call.tool.risk.value}) with {shown}? [y/n/a/e] "
        )
        answer = read(question).strip().lower()[:1]
        if answer == "a":
            return Mode.ALLOW_CONVERSATION, Decision(True)
        if answer == "e":
            try:
                edited = json.loads(read("New arguments (JSON): "))
            except ValueError:
                return None, Decision(False)
            return None, Decision(
                isinstance(edited, dict), edited if isinstance(edited, dict) else None
            )
        return None, Decision(answer == "y")

    return ask
