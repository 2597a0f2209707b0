"""The one reply builder: a turn's events folded into what the user sees and the debug record.

Every frontend shows what this builds — the window paints its changes, the terminal prints
them, the history stores its `Reply`, an import feeds it the stored messages — so two
frontends cannot show different things for the same output. `apply` takes any event of
the one union (`app/domain/events.py`) and decides each kind in one exhaustive match.

Guarantees:
- answers and preambles become segments; analysis only ever reaches `reply.debug.analysis`;
- late lane decisions: a message whose lane is known only when it closes (a header without
  `<|message|>`, text with no header before `<|return|>`, an unknown channel word that turns
  out to be the answer) is shown then, whole; a message first taken as visible that closes as
  hidden (a repeated answer) is emptied, never left on screen;
- a tool call is a card (tool, arguments, state), on any channel; the tool host's approval
  request and answer set its state (pending, running, denied) and its outcome, from the tool
  host or from a stored tool message, fills the card it answers;
- answer text that may be a tool call spelt out as ordinary text (W34) is held back from where
  it may begin until the message decides; a spelt-out call is never shown as the answer but
  said in a notice, whether the message ended or was cut;
- a JSON verdict, a failure and a cut message are said on the reply (`state`, `error`);
- `apply` returns the changes it made, in order, for a frontend to paint or print.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol, assert_never

from app.domain.events import (
    ContentDelta,
    GenerationDone,
    JsonChecked,
    JsonRetried,
    MessageDone,
    MessageStarted,
    ParseIssue,
    PromptRendered,
    RequestSent,
    ResponseReceived,
    StopReason,
    TokenScored,
    ToolCallDecided,
    ToolCallRequested,
    ToolsRan,
    TurnDone,
    TurnEvent,
    TurnFailed,
    TurnResult,
)
from app.domain.history import Reply, Segment
from app.domain.textual_call import held_from, split
from app.domain.visibility import Lane

VISIBLE = {Lane.ANSWER: "answer", Lane.PREAMBLE: "preamble"}


@dataclass(frozen=True)
class Added:
    """Segment `index` was appended (with whatever text it already holds)."""

    index: int


@dataclass(frozen=True)
class Appended:
    """`text` was appended to segment `index`."""

    index: int
    text: str


@dataclass(frozen=True)
class Updated:
    """Segment `index` changed otherwise (text replaced, card state, completeness)."""

    index: int


@dataclass(frozen=True)
class Thought:
    """Analysis text was added to the debug record (never shown in the transcript)."""

    text: str


Change = Added | Appended | Updated | Thought


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


class ReplyBuilder:
    """Folds one reply's events into its `Reply` (see the module guarantees)."""

    def __init__(
        self, reply: Reply, segments: dict[int, int] | None = None, *, stored: bool = False
    ) -> None:
        """`stored`: whole stored messages are folded (an import): the analysis is gathered
        and written once by `close`, so a reply of any length folds in linear time."""
        self.reply = reply
        self.segments: dict[int, int] = dict(segments or {})  # message index → segment index
        self.issues: list[ParseIssue] = []
        self.stop: StopReason | None = None
        self._held: dict[int, str] = {}  # segment index → answer text held back (W34)
        self._cards: dict[str, list[int]] = {}  # tool → its cards still without a result
        self._analysis: list[str] | None = [] if stored else None
        self._retries: list[str] = []  # what JSON mode backed up over, in order
        # ms of the turn before the current generation (the timeline; a continued reply goes on)
        self._clock = max((end for _, _, end in reply.debug.spans), default=0.0)

    def close(self) -> None:
        """Write what a `stored` fold gathered."""
        if self._analysis:
            self.reply.debug.analysis += "".join(self._analysis)
            self._analysis = []

    # --- the fold -------------------------------------------------------------------

    def apply(self, event: TurnEvent) -> list[Change]:
        """Fold one event of the turn in; the changes it made to the reply. The match is
        exhaustive over the event union (`assert_never`): a new event must be decided here."""
        match event:
            case MessageStarted():
                return self._started(event)
            case ContentDelta():
                return self._delta(event)
            case MessageDone():
                return self._done(event)
            case ParseIssue():
                self.issues.append(event)
                return self._debug(f"{event.code.value} ({event.severity.value}): {event.message}")
            case TurnDone():
                self.stop = event.stop
                return []
            case PromptRendered():
                return self.prompt(event.ids)
            case TokenScored():
                debug = self.reply.debug
                debug.token_scores.append((event.token, event.logprob, event.top))
                debug.token_times.append(round(self._clock + event.t_ms, 2))
                return []
            case GenerationDone():
                return self._generated(event)
            case TurnFailed():
                return self.fail(event.reason)
            case JsonChecked():
                return self._verdict(event)
            case JsonRetried():
                return self._retried(event)
            case RequestSent():
                return self._debug(f"request to {event.endpoint}: {json.dumps(event.body)}")
            case ResponseReceived():
                tops = event.top or ((),) * len(event.logprobs)
                self.reply.debug.text_scores += [
                    (token, lp, top) for (token, lp), top in zip(event.logprobs, tops, strict=True)
                ]
                return self._debug(f"response from {event.endpoint}: {json.dumps(_said(event))}")
            case ToolCallRequested():
                return self.requested(event)
            case ToolCallDecided():
                return self._decided(event)
            case ToolsRan():
                self._tool_spans(event)
                return [c for o in event.outcomes for c in self.outcome(o.call_id, None, o)]
            case TurnResult():
                return self._result(event)
            case _:
                assert_never(event)

    def _debug(self, line: str) -> list[Change]:
        self.reply.debug.events.append(line)
        return []

    def _generated(self, event: GenerationDone) -> list[Change]:
        t, debug = event.timings, self.reply.debug
        start, first, end = self._clock, self._clock + t.first_token_ms, self._clock + t.total_ms
        debug.spans += [("prompt", round(start, 2), round(first, 2)),
                        ("decode", round(first, 2), round(end, 2))]  # fmt: skip
        self._clock = end
        debug.stop_reason = event.reason.value
        debug.timings = {
            "prompt_tokens": t.prompt_tokens,
            "prompt_evaluated": t.prompt_evaluated,
            "prompt_reused": t.prompt_reused,
            "first_token_ms": round(t.first_token_ms, 1),
            "total_ms": round(t.total_ms, 1),
            "generated": t.generated,
            "tokens_per_s": round(t.decode_tokens_per_s, 1),
        }
        return []

    def _tool_spans(self, event: ToolsRan) -> None:
        """The calls ran side by side from now; the turn goes on when the last one ended."""
        ran = [(o.call_id, o.duration_ms) for o in event.outcomes if o.duration_ms is not None]
        for call_id, duration in ran:
            index = self.card_for(call_id, None)
            name = self.reply.segments[index].data.get("tool", "") if index is not None else ""
            self.reply.debug.spans.append(
                (f"tool {name}", round(self._clock, 2), round(self._clock + duration, 2))
            )
        self._clock += max((d for _, d in ran), default=0.0)

    def _retried(self, event: JsonRetried) -> list[Change]:
        """JSON mode backs up: the answer shows only what is kept; the next attempt goes on."""
        self._retries.append(f"{event.keyword} at {event.path or '/'}")
        self._debug(
            f"JSON retry {event.attempt}: the value at {event.path or '/'} broke"
            f" {event.keyword}; generating again from before it"
        )
        index = next(
            (i for i in reversed(range(len(self.reply.segments)))
             if self.reply.segments[i].kind == "answer"),
            None,
        )  # fmt: skip
        if index is None:
            return []
        self._held.pop(index, None)
        self.reply.segments[index].text = event.kept
        return [Updated(index)]

    def _verdict(self, event: JsonChecked) -> list[Change]:
        r = event.result
        verdict: dict[str, Any] = {"valid": r.valid, "error": r.error or "", "path": r.path}
        verdict["code"] = r.code.value if r.code else ""
        verdict["keyword"] = r.keyword
        verdict["enforced"], verdict["checked_after"] = list(r.enforced), list(r.checked_after)
        if event.target == "answer" and self._retries:
            verdict["retried"] = list(self._retries)
        return self.verdict(event.target, verdict, r.value)

    def _result(self, event: TurnResult) -> list[Change]:
        changes = [
            c for r in event.records for c in self.outcome(r.outcome.call_id, r.tool, r.outcome)
        ]
        if event.reason == "loop cap":
            changes += self.notice("Stopped: too many tool calls in one turn.")
        return changes

    def prompt(self, ids: tuple[int, ...]) -> list[Change]:
        """A generation starts from the prompt `ids` (for the debug pane and Continue)."""
        debug = self.reply.debug
        debug.prompt_ids = ids
        debug.generation_start, debug.generation_messages = len(debug.token_ids), 0
        return []

    def _add(self, segment: Segment) -> list[Change]:
        self.reply.segments.append(segment)
        return [Added(len(self.reply.segments) - 1)]

    def _started(self, event: MessageStarted) -> list[Change]:
        kind = VISIBLE.get(event.lane)
        if kind is None or event.index in self.segments:
            return []
        changes = self._add(Segment(kind))  # type: ignore[arg-type]
        self.segments[event.index] = len(self.reply.segments) - 1
        return changes

    def _delta(self, event: ContentDelta) -> list[Change]:
        if event.lane is Lane.ANALYSIS:
            self.reply.debug.analysis += event.text
            return [Thought(event.text)]
        index = self.segments.get(event.index)
        if index is None or event.lane not in VISIBLE:
            return []
        segment = self.reply.segments[index]
        text = self._held.pop(index, "") + event.text
        if event.lane is Lane.ANSWER:  # text that may be a call spelt out waits (W34)
            cut = held_from(segment.text, text)
            text, held = text[:cut], text[cut:]
            if held:
                self._held[index] = held
        if not text:
            return []
        segment.text += text
        return [Appended(index, text)]

    def _done(self, event: MessageDone) -> list[Change]:
        debug = self.reply.debug
        debug.token_ids.extend(event.token_ids)
        debug.generation_messages += 1
        if not event.complete:
            self.reply.state = "incomplete"
        if event.lane is Lane.ANALYSIS:
            return self._hidden(event)
        if event.lane is Lane.TOOL_CALL:
            data = {"tool": event.message.recipient, "arguments": event.message.text}
            data |= {"state": "called", "risk": ""}
            changes = self._add(Segment("tool", data=data, complete=event.complete))
            card = len(self.reply.segments) - 1
            self._cards.setdefault(str(event.message.recipient), []).append(card)
            return changes
        if event.lane is Lane.TOOL_RESULT:
            return self._tool_message(event)
        shown, spelt = event.message.text, ""
        if event.lane is Lane.ANSWER:
            shown, spelt = split(shown)
        index = self.segments.get(event.index)
        if index is None:  # decided only now (W10, W24): shown whole
            kind = VISIBLE[event.lane]
            changes = self._add(Segment(kind, shown, complete=event.complete))  # type: ignore[arg-type]
            self.segments[event.index] = len(self.reply.segments) - 1
        else:
            self._held.pop(index, None)
            segment = self.reply.segments[index]
            segment.complete = event.complete
            segment.text = shown  # the message's text wins (resolved late, or held back)
            changes = [Updated(index)]
        if spelt:
            self.reply.debug.events.append(
                "E-CALL-SCHEMA (warning): a tool call written as ordinary text in the answer"
            )
            changes += self.notice(
                "The model wrote a tool call as ordinary text instead of making it; it was not"
                f" run: {spelt[:300]}"
            )
        return changes

    def _hidden(self, event: MessageDone) -> list[Change]:
        """An analysis message: its text to the debug record; a segment it had is emptied."""
        debug = self.reply.debug
        changes: list[Change] = []
        index = self.segments.pop(event.index, None)
        if index is not None:  # it looked visible while it streamed (a repeated answer)
            self.reply.segments[index].text = ""
            changes.append(Updated(index))
        text = event.message.text
        if self._analysis is not None:  # a stored message: gathered, written at `close`
            self._analysis.append(f"{text}\n" if text else "")
            return changes
        if text and not debug.analysis.endswith(text):
            debug.analysis += text
            changes.append(Thought(text))
        if text and not debug.analysis.endswith("\n"):
            debug.analysis += "\n"
        return changes

    def _tool_message(self, event: MessageDone) -> list[Change]:
        """A stored tool reply (an import, a history): it fills the card it answers."""
        text = event.message.text
        waiting = self._cards.get(str(event.message.author.name))
        if not waiting:
            return []
        index = waiting.pop(0)
        ok = not text.startswith('{"ok": false')
        self.reply.segments[index].data.update(state="ok" if ok else "error", result=text)
        return [Updated(index)]

    # --- outcomes and verdicts ------------------------------------------------------

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
            changes = self._add(Segment("tool", data=data, complete=True))
            index = len(self.reply.segments) - 1
        data = self.reply.segments[index].data
        if data.get("state") != "called":
            return changes
        arguments = json.dumps(event.arguments, ensure_ascii=False, indent=1)
        data.update(state="pending", risk=event.risk, arguments=arguments, source=event.source)
        return [*changes, Updated(index)]

    def _decided(self, event: ToolCallDecided) -> list[Change]:
        index = self.card_for(event.call_id, None)
        if index is None:
            return []
        data = self.reply.segments[index].data
        data.update(state="running" if event.allow else "denied", decision=event.how)
        if event.allow:
            data["arguments"] = json.dumps(event.arguments, ensure_ascii=False, indent=1)
        return [Updated(index)]

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
        data["state"] = "ok" if result.ok else "error"
        data["result"] = content if result.ok else f"{result.error_code}: {result.error}"
        data["duration_ms"] = result.duration_ms
        data["decision"] = result.decision
        return [Updated(index)]

    def verdict(self, target: str, verdict: dict[str, Any], value: Any) -> list[Change]:
        """JSON mode's verdict: on the answer, a JSON block with its badge."""
        if target != "answer":
            return []
        pretty = json.dumps(value, indent=2, ensure_ascii=False) if value is not None else ""
        data = {**verdict, "target": target}
        return self._add(Segment("json", pretty, data=data, complete=True))

    def notice(self, text: str) -> list[Change]:
        """Something the user should read on the reply (not model text)."""
        return self._add(Segment("notice", text, complete=True))

    def fail(self, reason: str) -> list[Change]:
        """The reply failed: said on it, with what arrived kept."""
        self.reply.state, self.reply.error = "failed", reason
        text = f"The reply failed: {reason}. What arrived is kept; you can regenerate it."
        return self._add(Segment("error", text, complete=True))


def _said(event: ResponseReceived) -> dict[str, Any]:
    """What a remote endpoint said about its answer, for the debug record."""
    said: dict[str, Any] = {"id": event.response_id, "finish_reason": event.finish_reason}
    said |= {"usage": event.usage} if event.usage else {"usage": "not reported"}
    if event.logprobs:
        said["logprobs"] = [[t, round(lp, 4)] for t, lp in event.logprobs]
    return said


__all__ = ["Added", "Appended", "CallResult", "Change", "ReplyBuilder", "Thought", "Updated"]
