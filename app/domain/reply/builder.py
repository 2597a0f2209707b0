"""The one reply builder: a turn's events folded into what the user sees and the debug record.

`ReplyBuilder.apply` takes any event of the one union (`app/domain/events.py`) and decides each
kind in one exhaustive match, by group: the parser's message events (the answer, preamble and
analysis lanes, decided here), the generation's debug events (`DebugLog`), the tool host's
events (`ToolCards`), JSON mode's retries and verdicts, and a failure. Each group's own match is
exhaustive too (`assert_never`), so mypy refuses an event no group decides.

Guarantees:
- answers and preambles become segments; analysis only ever reaches `reply.debug.analysis`;
- late lane decisions: a message whose lane is known only when it closes (a header without
  `<|message|>`, text with no header before `<|return|>`, an unknown channel word that turns
  out to be the answer) is shown then, whole; a message first taken as visible that closes as
  hidden (a repeated answer) is emptied, never left on screen;
- answer text that may be a tool call spelt out as ordinary text (W34) is held back from where
  it may begin until the message decides; a spelt-out call is never shown as the answer but
  said in a notice, whether the message ended or was cut;
- a JSON verdict, a failure and a cut message are said on the reply (`state`, `error`);
- what the overflow policy left out of the prompt or cut to fit the context is said in a
  notice, once per reply (`ContextFit`); the prompt's budget goes to the debug record;
- `apply` returns the changes it made, in order, for a frontend to paint or print.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from app.domain import echoed_markup
from app.domain.budget import notice
from app.domain.events import (
    Compacted,
    Compacting,
    ContentDelta,
    ContextFit,
    GenerationDone,
    JsonChecked,
    JsonRetried,
    MessageDone,
    MessageStarted,
    ParseEvent,
    ParseIssue,
    PromptRendered,
    RequestSent,
    ResponseReceived,
    StopReason,
    TokenScored,
    ToolCallDecided,
    ToolCallRequested,
    ToolProgress,
    ToolsRan,
    TurnDone,
    TurnEvent,
    TurnFailed,
    TurnResult,
)
from app.domain.history import Reply, Segment
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.reply.cards import ToolCards
from app.domain.reply.changes import Appended, Change, Thought, Updated, add
from app.domain.reply.debug import DebugLog
from app.domain.textual_call import held_from, split
from app.domain.visibility import Lane
from app.errors import ErrorCode

VISIBLE = {Lane.ANSWER: "answer", Lane.PREAMBLE: "preamble"}

DebugEvent = PromptRendered | TokenScored | GenerationDone | RequestSent | ResponseReceived
ToolEvent = ToolCallRequested | ToolCallDecided | ToolProgress | ToolsRan | TurnResult
JsonEvent = JsonChecked | JsonRetried


# issues the reply shows: a call that was not valid, tools not offered, a compaction not made,
# an earlier tool image no longer kept here
_SAID = (ErrorCode.CALL_SCHEMA, ErrorCode.TOOLS_UNAVAILABLE, ErrorCode.CONTEXT, ErrorCode.RESOURCE)


class ReplyBuilder:
    """Folds one reply's events into its `Reply` (see the module guarantees); its tool cards
    are `cards`, its debug record's writer `debug`."""

    def __init__(
        self, reply: Reply, segments: dict[int, int] | None = None, *, stored: bool = False
    ) -> None:
        """`stored`: whole stored messages are folded (an import): the analysis is gathered
        and written once by `close`, so a reply of any length folds in linear time."""
        self.reply = reply
        self.segments: dict[int, int] = dict(segments or {})  # message index → segment index
        self.issues: list[ParseIssue] = []
        self.stop: StopReason | None = None
        self.cards = ToolCards(reply)
        self.debug = DebugLog(reply)
        self._held: dict[int, str] = {}  # segment index → answer text held back (W34)
        self._analysis: list[str] | None = [] if stored else None
        self._retries: list[str] = []  # what JSON mode backed up over, in order
        self._fit_said: set[str] = set()  # what fitting the context changed, said once each

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
            case MessageStarted() | ContentDelta() | MessageDone() | ParseIssue() | TurnDone():
                return self._parsed(event)
            case (
                PromptRendered()
                | TokenScored()
                | GenerationDone()
                | RequestSent()
                | ResponseReceived()
            ):
                self._debugged(event)
                return []
            case (
                ToolCallRequested() | ToolCallDecided() | ToolProgress() | ToolsRan() | TurnResult()
            ):
                return self._tools(event)
            case JsonChecked() | JsonRetried():
                return self._json(event)
            case TurnFailed():
                return self.fail(event.reason, event.code)
            case ContextFit():
                return self._fitted(event)
            case PromptRead() | ImageEncoding():
                return []  # the prompt is being read: a frontend's progress, not the reply
            case Compacting():
                self.debug.line(f"compacting: {event.exchanges} exchanges, {event.tokens} tokens")
                return []
            case Compacted():
                return self._compacted(event)
            case _:
                assert_never(event)

    def _parsed(self, event: ParseEvent) -> list[Change]:
        match event:
            case MessageStarted():
                return self._started(event)
            case ContentDelta():
                return self._delta(event)
            case MessageDone():
                return self._done(event)
            case ParseIssue():
                self.issues.append(event)
                self.debug.issue(event)
                if event.code in _SAID:  # a call that was not valid, tools not offered: said
                    return self.notice(event.message, event.raw)
                return []
            case TurnDone():
                self.stop = event.stop
                return []
            case _:
                assert_never(event)

    def _debugged(self, event: DebugEvent) -> None:
        """Only the debug record keeps these (never a segment)."""
        match event:
            case PromptRendered():
                self.debug.prompt(event.ids)
            case TokenScored():
                self.debug.scored(event)
            case GenerationDone():
                self.debug.generated(event)
            case RequestSent():
                self.debug.sent(event)
            case ResponseReceived():
                self.debug.received(event)
            case _:
                assert_never(event)

    def _tools(self, event: ToolEvent) -> list[Change]:
        match event:
            case ToolCallRequested():
                return self.cards.requested(event)
            case ToolCallDecided():
                return self.cards.decided(event)
            case ToolProgress():
                return self.cards.progressed(event)
            case ToolsRan():
                self.debug.tools_ran(self.cards.durations(event))
                return self.cards.ran(event)
            case TurnResult():
                changes = self.cards.recorded(event.records)
                if event.reason == "loop cap":
                    changes += self.notice("Stopped: too many tool calls in one turn.")
                return changes
            case _:
                assert_never(event)

    def _json(self, event: JsonEvent) -> list[Change]:
        match event:
            case JsonChecked():
                return self._verdict(event)
            case JsonRetried():
                return self._retried(event)
            case _:
                assert_never(event)

    # --- the answer, preamble and analysis lanes -----------------------------------

    def _started(self, event: MessageStarted) -> list[Change]:
        kind = VISIBLE.get(event.lane)
        if kind is None or event.index in self.segments:
            return []
        changes = add(self.reply, Segment(kind))  # type: ignore[arg-type]
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
        if event.lane is Lane.ANSWER:  # a call spelt out (W34), echoed markup (L15) wait
            text, echo_cut = echoed_markup.settle(text)
            cut = min(held_from(segment.text, text), echo_cut)
            text, held = text[:cut], text[cut:]
            if held:
                self._held[index] = held
        if not text:
            return []
        segment.text += text
        return [Appended(index, text)]

    def _done(self, event: MessageDone) -> list[Change]:
        self.debug.message(event)
        if not event.complete:
            self.reply.state = "incomplete"
        if event.lane is Lane.ANALYSIS:
            return self._hidden(event)
        if event.lane is Lane.TOOL_CALL:
            return self.cards.called(event)
        if event.lane is Lane.TOOL_RESULT:
            return self.cards.answered(event)
        return self._shown(event)

    def _shown(self, event: MessageDone) -> list[Change]:
        """An answer or preamble message closed: its text wins over what streamed."""
        shown, spelt, echoed = event.message.text, "", list[str]()
        if event.lane is Lane.ANSWER:
            shown, spelt = split(shown)
            shown, echoed = echoed_markup.split(shown)
        index = self.segments.get(event.index)
        if index is None:  # decided only now (W10, W24): shown whole
            kind = VISIBLE[event.lane]
            changes = add(self.reply, Segment(kind, shown, complete=event.complete))  # type: ignore[arg-type]
            self.segments[event.index] = len(self.reply.segments) - 1
        else:
            self._held.pop(index, None)
            segment = self.reply.segments[index]
            segment.complete = event.complete
            segment.text = shown  # the message's text wins (resolved late, or held back)
            changes = [Updated(index)]
        if spelt:
            changes += self._spelt(spelt)
        if echoed:
            self.debug.line("an answer echoed a tool result in template markup (not shown)")
            changes += self.notice(echoed_markup.echo_notice(echoed))
        return changes

    def _spelt(self, spelt: str) -> list[Change]:
        """A tool call the model wrote as ordinary answer text: said, never run."""
        self.debug.line(
            "E-CALL-SCHEMA (warning): a tool call written as ordinary text in the answer"
        )
        return self.notice(
            "The model wrote a tool call as ordinary text instead of making it; it was not"
            f" run: {spelt[:300]}"
        )

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

    # --- JSON mode, notices, failure -----------------------------------------------

    def _retried(self, event: JsonRetried) -> list[Change]:
        """JSON mode backs up: the answer shows only what is kept; the next attempt goes on."""
        self._retries.append(f"{event.keyword} at {event.path or '/'}")
        self.debug.line(
            f"JSON retry {event.attempt}: the value at {event.path or '/'} broke"
            f" {event.keyword}; generating again from before it"
        )
        index = next(
            (
                i
                for i in reversed(range(len(self.reply.segments)))
                if self.reply.segments[i].kind == "answer"
            ),
            None,
        )
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

    def verdict(self, target: str, verdict: dict[str, Any], value: Any) -> list[Change]:
        """JSON mode's verdict: on the answer, a JSON block with its badge."""
        if target != "answer":
            return []
        pretty = json.dumps(value, indent=2, ensure_ascii=False) if value is not None else ""
        data = {**verdict, "target": target}
        return add(self.reply, Segment("json", pretty, data=data, complete=True))

    def _fitted(self, event: ContextFit) -> list[Change]:
        """The prompt's budget to the debug record; what the overflow policy left out or cut
        said on the reply, once (each step of a tool turn fits the same conversation again)."""
        self.reply.debug.budget = event.budget.to_dict()
        self.debug.line(event.budget.sentence(event.policy))
        said = notice(event.policy, event.exchanges, event.dropped, event.cuts)
        if not said or said in self._fit_said:
            return []
        self._fit_said.add(said)
        self.debug.line(said)
        return self.notice(said)

    def _compacted(self, event: Compacted) -> list[Change]:
        """The compaction said on the reply, where it happened, carrying its record (the
        summary, readable from the marker, and what undoing it needs: `compaction_of`)."""
        c = event.compaction
        self.debug.line(f"compacted: {c.said()}; the summary: {c.summary}")
        said = (
            f"Compacted: {c.said()}. The model now reads a summary of them; undo gives them back."
        )
        data = {"compaction": c.to_dict()}
        return add(self.reply, Segment("notice", said, data=data, complete=True))

    def notice(self, text: str, raw: str = "") -> list[Change]:
        """Something the user should read on the reply (not model text); `raw`, the model's
        own text it stands for (an invalid call's markup), kept in its data as `raw`."""
        data = {"raw": raw} if raw else {}
        return add(self.reply, Segment("notice", text, data, complete=True))

    def fail(self, reason: str, code: ErrorCode | None = None) -> list[Change]:
        """The reply failed: said on it, with what arrived kept. A conversation that outgrew
        the context says so, and its error starts with the code (the window offers no
        Continue that would fail the same way)."""
        if code is ErrorCode.CONTEXT:
            self.reply.state, self.reply.error = "failed", f"{code.value}: {reason}"
            text = (
                f"This conversation no longer fits the model's context ({reason}). Start a new"
                " chat, load the model with a larger context (Model settings), or let older"
                " messages be left out of the prompt (overflow: drop-middle or rolling)."
            )
        else:
            self.reply.state, self.reply.error = "failed", reason
            text = f"The reply failed: {reason}. What arrived is kept; you can regenerate it."
        return add(self.reply, Segment("error", text, complete=True))


__all__ = ["ReplyBuilder"]
