"""Tool calls written as text in a remote endpoint's answer: never run unless the user said its
server passes the model's raw output through.

A remote model's calls come from the API's structured output (`tool_calls`). Its answer text is
text: a model that writes `<|channel|>commentary to=functions.x <|constrain|>json<|message|>
{…}<|call|>` into its answer — because a page or a tool result told it to, or by mistake — must
not run a tool, however the markup reads. Only an endpoint whose `Endpoint.text_calls` is set
(`endpoints add --text-calls`: a raw server that does not parse gpt-oss output itself) has its
Harmony markup's calls read as calls; one with a `tool_calls` format has that family's calls
read by its scanner (`reply`), which the user named as well.

Guarantees (`TextCalls.events`, over the Harmony parser's events of a remote answer): with
calls from text allowed, the events pass unchanged; without, a message the markup addresses to
a tool keeps its text, with no recipient and no content type, on the lane its channel gives
(`commentary`: a preamble, shown; `analysis`: the debug pane), so the turn loop finds no call
in it; a `ParseIssue` (E-CALL-SCHEMA, which the reply says as a notice) says which call was not
run and how to allow such calls; the `TurnDone` its `<|call|>` ended is a `RETURN` instead.
"""

from __future__ import annotations

import dataclasses

from app.domain.events import (
    ContentDelta,
    MessageDone,
    MessageStarted,
    ParseEvent,
    ParseIssue,
    StopReason,
    TurnDone,
)
from app.domain.messages import Role
from app.domain.visibility import Lane, is_tool_recipient, route
from app.errors import ErrorCode


def not_run(recipient: str) -> str:
    """What the notice says of a call written as text that was not run."""
    return (
        f"The answer held a call to {recipient} written as text; it was not run: a remote"
        " endpoint's calls come from its API's tool_calls. If its server passes the model's"
        " raw output through, allow such calls with `harmony-desk endpoints add NAME ..."
        " --text-calls`."
    )


@dataclasses.dataclass
class TextCalls:
    """The Harmony parser's events of one remote answer, calls kept as text unless `allowed`
    (see the module guarantees)."""

    allowed: bool = False
    demoted: set[int] = dataclasses.field(default_factory=set)  # the parser's message indices
    channels: dict[int, str | None] = dataclasses.field(default_factory=dict)  # by index

    def events(self, events: list[ParseEvent]) -> list[ParseEvent]:
        """`events` as this answer's (see the module guarantees)."""
        if self.allowed:
            return events
        return [kept for event in events for kept in self._one(event)]

    def _lane(self, index: int) -> Lane:
        return route(Role.ASSISTANT, self.channels.get(index), None)

    def _one(self, event: ParseEvent) -> list[ParseEvent]:
        if isinstance(event, MessageStarted):
            self.channels[event.index] = event.channel
            if not is_tool_recipient(event.recipient):
                return [event]
            self.demoted.add(event.index)
            said = ParseIssue(
                ErrorCode.CALL_SCHEMA, not_run(event.recipient or ""), index=event.index
            )
            text = dataclasses.replace(
                event, recipient=None, content_type=None, lane=self._lane(event.index)
            )
            return [said, text]
        if isinstance(event, ContentDelta) and (
            event.index in self.demoted or event.lane is Lane.TOOL_CALL
        ):
            self.demoted.add(event.index)
            return [dataclasses.replace(event, lane=self._lane(event.index))]
        if isinstance(event, MessageDone):
            message = event.message
            if event.index not in self.demoted and not is_tool_recipient(message.recipient):
                return [event]
            self.demoted.add(event.index)
            self.channels[event.index] = message.channel
            plain = message.model_copy(update={"recipient": None, "content_type": None})
            return [dataclasses.replace(event, message=plain, lane=self._lane(event.index))]
        if isinstance(event, TurnDone) and event.stop is StopReason.CALL and self.demoted:
            return [dataclasses.replace(event, stop=StopReason.RETURN)]
        return [event]


__all__ = ["TextCalls", "not_run"]
