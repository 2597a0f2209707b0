"""A reply's tool cards: one card per tool call, its approval state and its outcome.

Guarantees:
- a tool call is a card (tool, arguments, state), on any channel; a call the tool host asks
  about before any card said it gets one then;
- the tool host's approval request and answer set the card's state (pending, running,
  denied); asked twice, a request changes nothing;
- what a running call says of its progress is on its card (`progress`: done, total, message)
  until its outcome, which takes it off; progress for a card that is not running is ignored;
- an outcome — from the tool host, the turn's records or a stored tool message — fills the
  card it answers, once: a later report of the same call is ignored;
- a call id is bound to the first card of its tool that has none yet, and stays bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol

from app.domain.events import (
    CallRecord,
    MessageDone,
    ToolCallDecided,
    ToolCallRequested,
    ToolProgress,
    ToolsRan,
)
from app.domain.history import Reply, Segment
from app.domain.reply.changes import Change, Updated, add


class CallResult(Protocol):
    """What a tool call's outcome says (the engine's `CallOutcome` is one)."""

    @property
    def ok(self) -> bool: ...
    @property
    def content(self) -> Any: ...
    @property
    def error_code(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def duration_ms(self) -> float | None: ...
    @property
    def decision(self) -> str: ...


class ToolCards:
    """The tool cards of one reply (see the module guarantees)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self._waiting: dict[str, list[int]] = {}  # tool → its cards still without a result

    def called(self, event: MessageDone) -> list[Change]:
        """The model's call message: a card for it, waiting for its result."""
        data = {"tool": event.message.recipient, "arguments": event.message.text}
        data |= {"state": "called", "risk": ""}
        changes = add(self.reply, Segment("tool", data=data, complete=event.complete))
        card = len(self.reply.segments) - 1
        self._waiting.setdefault(str(event.message.recipient), []).append(card)
        return changes

    def answered(self, event: MessageDone) -> list[Change]:
        """A stored tool reply (an import, a history): it fills the card it answers."""
        text = event.message.text
        waiting = self._waiting.get(str(event.message.author.name))
        if not waiting:
            return []
        index = waiting.pop(0)
        ok = not text.startswith('{"ok": false')
        self.reply.segments[index].data.update(state="ok" if ok else "error", result=text)
        return [Updated(index)]

    def card_for(self, call_id: str, tool: str | None) -> int | None:
        """The tool card of `call_id` (the first unanswered card of `tool` takes the id)."""
        for i, s in enumerate(self.reply.segments):
            if s.kind == "tool" and s.data.get("call_id") == call_id:
                return i
        for i, s in enumerate(self.reply.segments):
            if s.kind == "tool" and "call_id" not in s.data and tool in (None, s.data["tool"]):
                s.data["call_id"] = call_id
                return i
        return None

    def requested(self, event: ToolCallRequested) -> list[Change]:
        """The call waits for approval: its card (made now if the call had none) says so, with
        the tool's risk and the arguments the user may edit. Said twice, it changes nothing."""
        changes: list[Change] = []
        index = self.card_for(event.call_id, event.tool)
        if index is None:
            data = {"tool": event.tool, "call_id": event.call_id, "state": "called"}
            changes = add(self.reply, Segment("tool", data=data, complete=True))
            index = len(self.reply.segments) - 1
        data = self.reply.segments[index].data
        if data.get("state") != "called":
            return changes
        arguments = json.dumps(event.arguments, ensure_ascii=False, indent=1)
        data.update(state="pending", risk=event.risk, arguments=arguments, source=event.source)
        return [*changes, Updated(index)]

    def decided(self, event: ToolCallDecided) -> list[Change]:
        """The approval's answer: the card runs (with the arguments as run) or is denied."""
        index = self.card_for(event.call_id, None)
        if index is None:
            return []
        data = self.reply.segments[index].data
        data.update(state="running" if event.allow else "denied", decision=event.how)
        if event.allow:
            data["arguments"] = json.dumps(event.arguments, ensure_ascii=False, indent=1)
        return [Updated(index)]

    def progressed(self, event: ToolProgress) -> list[Change]:
        """A running call's progress, on its card."""
        for index, s in enumerate(self.reply.segments):
            if s.kind == "tool" and s.data.get("call_id") == event.call_id:
                if s.data.get("state") != "running":
                    return []
                s.data["progress"] = {
                    "done": event.done,
                    "total": event.total,
                    "message": event.message,
                }
                return [Updated(index)]
        return []

    def durations(self, event: ToolsRan) -> list[tuple[str, float]]:
        """Each call of the batch that ran: its tool's name and how long it took (ms)."""
        named: list[tuple[str, float]] = []
        for o in event.outcomes:
            if o.duration_ms is None:
                continue
            index = self.card_for(o.call_id, None)
            name = self.reply.segments[index].data.get("tool", "") if index is not None else ""
            named.append((name, o.duration_ms))
        return named

    def ran(self, event: ToolsRan) -> list[Change]:
        """The batch's outcomes, each on its card."""
        return [c for o in event.outcomes for c in self.outcome(o.call_id, None, o)]

    def recorded(self, records: Iterable[CallRecord]) -> list[Change]:
        """The turn's audit records: each outcome on its card (the tool names the card)."""
        return [c for r in records for c in self.outcome(r.outcome.call_id, r.tool, r.outcome)]

    def outcome(self, call_id: str, tool: str | None, result: CallResult) -> list[Change]:
        """A call's outcome on its card (once: a later report of the same call is ignored)."""
        index = self.card_for(call_id, tool)
        if index is None:
            return []
        data = self.reply.segments[index].data
        if data.get("state") in ("ok", "error"):
            return []
        content = result.content
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, indent=1)
        data.pop("progress", None)
        data["state"] = "ok" if result.ok else "error"
        data["result"] = content if result.ok else f"{result.error_code}: {result.error}"
        data["duration_ms"] = result.duration_ms
        data["decision"] = result.decision
        return [Updated(index)]


__all__ = ["CallResult", "ToolCards"]
