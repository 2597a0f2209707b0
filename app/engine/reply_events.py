"""The engine's own events folded into the one reply builder (`app/domain/reply_builder.py`).

Guarantee: every event a turn produces reaches the builder through `fold` — parser events as
they are, tool outcomes, JSON verdicts, failures and timings through the builder's methods —
so the window and the terminal fold a turn the same way.
"""

from __future__ import annotations

from app.domain.reply_builder import Change, ReplyBuilder
from app.engine.chat import JsonChecked, PromptRendered
from app.engine.protocol import GenerationDone, TurnFailed
from app.engine.tool_turn import ToolsRan
from app.engine.turn_loop import TurnResult


def fold(builder: ReplyBuilder, event: object) -> list[Change]:
    """Fold one event of a turn into `builder`; the changes it made."""
    match event:
        case PromptRendered():
            return builder.prompt(event.ids)
        case GenerationDone():
            builder.reply.debug.stop_reason = event.reason.value
            return []
        case TurnFailed():
            return builder.fail(event.reason)
        case JsonChecked():
            r = event.result
            verdict = {"valid": r.valid, "error": r.error or "", "path": r.path}
            verdict["code"] = r.code.value if r.code else ""
            return builder.verdict(event.target, verdict, r.value)
        case ToolsRan():
            return [c for o in event.outcomes for c in builder.outcome(o.call_id, None, o)]
        case TurnResult():
            changes = [
                c
                for r in event.records
                for c in builder.outcome(r.outcome.call_id, r.tool, r.outcome)
            ]
            if event.reason == "loop cap":
                changes += builder.notice("Stopped: too many tool calls in one turn.")
            return changes
        case _:
            return builder.apply(event)


__all__ = ["fold"]
