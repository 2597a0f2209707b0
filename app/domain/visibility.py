"""The one visibility rule: which lane a message belongs to.

A message with a tool recipient is a tool call on any channel; `final` is the answer; a
`commentary` message without a recipient is a preamble; everything else an assistant writes
(analysis, unknown or missing channels) is hidden analysis. When unsure, hide.
"""

from __future__ import annotations

from enum import StrEnum

from app.domain.messages import Role


class Lane(StrEnum):
    """Where a message is shown."""

    ANSWER = "answer"  # the transcript, as the final answer
    PREAMBLE = "preamble"  # the transcript, styled as commentary meant for the user
    TOOL_CALL = "tool_call"  # a tool card; the raw body only in the debug pane
    TOOL_RESULT = "tool_result"  # a tool card
    ANALYSIS = "analysis"  # the debug pane only
    PROMPT = "prompt"  # system, developer and user messages


VISIBLE_TEXT_LANES = frozenset({Lane.ANSWER, Lane.PREAMBLE})
_NOT_TOOLS = frozenset({"all", "assistant", "user"})


def is_tool_recipient(recipient: str | None) -> bool:
    """True when `recipient` names a tool (not `all`, `assistant` or `user`)."""
    return bool(recipient) and recipient not in _NOT_TOOLS


def route(role: Role, channel: str | None, recipient: str | None) -> Lane:
    """The lane of a message with this author role, channel and recipient."""
    if role is Role.TOOL:
        return Lane.TOOL_RESULT
    if role is not Role.ASSISTANT:
        return Lane.PROMPT
    if is_tool_recipient(recipient):
        return Lane.TOOL_CALL
    if channel == "final":
        return Lane.ANSWER
    if channel == "commentary":
        return Lane.PREAMBLE
    return Lane.ANALYSIS


def shows_text(lane: Lane) -> bool:
    """True when a lane's text may appear in the normal transcript."""
    return lane in VISIBLE_TEXT_LANES
