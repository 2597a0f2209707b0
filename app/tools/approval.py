"""Approval of tool calls: ask every time (default), allow for this conversation, always, deny.

Guarantees: a tool the user denied never runs; "allow for this conversation" lasts as long as
the policy object (one per conversation); "always allow" and "deny" are saved (atomically, in
the config folder) and apply to every later conversation until the user resets them; a
damaged approvals file is reported and treated as empty (every tool asks again: the safe side);
the request shows the tool, its risk and the arguments, which the user may replace before the
call runs. A choice is keyed by `approval_key`: the tool's qualified name, and for a tool whose
function carries an `approval_identity` (an MCP server's: its command and arguments, or its
URL) that identity too — a new server given an old one's name inherits none of its choices.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from app.domain.inert import inert
from app.domain.tool_names import readable
from app.fileio import write_atomic
from app.paths import config_dir
from app.readback import read_back
from app.tools.api import Tool
from app.tools.calls import Decision, PendingCall


class Mode(StrEnum):
    ASK = "ask"
    ALLOW_CONVERSATION = "allow for this conversation"
    ALWAYS = "always allow"
    DENY = "deny"


Ask = Callable[[PendingCall], tuple[Mode | None, Decision]]
log = logging.getLogger("tools")
APPROVALS_LIMIT = 16 << 20  # bytes
_SAVED = (Mode.ALWAYS, Mode.DENY)


def approval_key(tool: Tool) -> str:
    """What a tool's approval choices are kept under (see the module guarantees)."""
    identity = getattr(tool.function, "approval_identity", None)
    return f"{tool.qualified_name}@{identity}" if isinstance(identity, str) else tool.qualified_name


class ApprovalStore:
    """The saved per-tool choices ("always allow", "deny"), one JSON file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "tool-approvals.json"

    def load(self) -> dict[str, Mode]:
        data = read_back(self.path, APPROVALS_LIMIT)
        if data is None:
            return {}  # none, or set aside and said
        try:
            return {str(k): Mode(v) for k, v in data.items() if Mode(v) in _SAVED}
        except (ValueError, AttributeError) as exc:
            log.warning("ignoring the saved tool approvals in %s: %s", self.path, exc)
            return {}

    def remember(self, tool: str, mode: Mode) -> None:
        self._save({**self.load(), tool: mode})

    def forget(self, tool: str | None = None) -> None:
        """Drop the saved choice for `tool` (every saved choice when None)."""
        self._save({} if tool is None else {k: v for k, v in self.load().items() if k != tool})

    def _save(self, modes: dict[str, Mode]) -> None:
        text = json.dumps({k: v.value for k, v in sorted(modes.items())}, indent=1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, text)


class ApprovalPolicy:
    """Per-tool approval modes for one conversation; `ask` is consulted in `ASK` mode."""

    def __init__(
        self, ask: Ask, modes: dict[str, Mode] | None = None, store: ApprovalStore | None = None
    ) -> None:
        self.ask = ask
        self.store = store
        saved = store.load() if store is not None else {}
        self.modes: dict[str, Mode] = {**saved, **(modes or {})}

    def __call__(self, call: PendingCall) -> Decision:
        key = approval_key(call.tool)
        mode = self.modes.get(key, Mode.ASK)
        if mode is Mode.DENY:
            return Decision(False, how="denied by policy")
        if mode in (Mode.ALLOW_CONVERSATION, Mode.ALWAYS):
            return Decision(True, how=mode.value)
        remember, decision = self.ask(call)
        if remember is not None:
            self.modes[key] = remember
            if self.store is not None and remember in (Mode.ALWAYS, Mode.DENY):
                self.store.remember(key, remember)
        verdict = "allowed" if decision.allow else "denied"
        return dataclasses.replace(decision, how=decision.how or f"asked: {verdict}")


def terminal_ask(read: Callable[[str], str]) -> Ask:
    """An `Ask` that prompts on a terminal: [y]es, [n]o, [a]llow for this chat, always allow
    ([A]), [N]ever, [e]dit arguments; the tool's name and arguments are shown inert
    (`app.domain.inert`: no escape sequence or bidi character in them acts on the terminal,
    a long one is cut with how much more there was); the tool by the name the window gives it
    (`app.domain.tool_names.readable`: "get_current_time · time")."""

    def ask(call: PendingCall) -> tuple[Mode | None, Decision]:
        shown = inert(json.dumps(call.arguments, ensure_ascii=False))  # escapes shown, not run
        question = (
            f"Run {inert(readable(call.tool.qualified_name, call.tool.plugin))}"
            f" ({call.tool.risk.value}) with {shown}?"
            " [y]es [n]o [a]llow in this chat [A]lways [N]ever [e]dit: "
        )
        raw = read(question).strip()[:1]
        if raw == "A":
            return Mode.ALWAYS, Decision(True, how="asked: always allow")
        if raw == "N":
            return Mode.DENY, Decision(False, how="asked: deny from now on")
        answer = raw.lower()
        if answer == "a":
            return Mode.ALLOW_CONVERSATION, Decision(True, how="asked: allow for this conversation")
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
