"""The terminal chat's view of a reply: what the one reply builder shows, printed.

Guarantees: stdout receives exactly the text of the reply's answer and preamble segments as the
`ReplyBuilder` builds them — streamed as it grows, a message decided only when it closes printed
then, whole — so the terminal shows what the window shows; analysis goes to stderr only with
`--show-analysis`; tool calls, their outcomes, JSON verdicts, parse problems, timings and failures
are lines on stderr, and after each generation's timings, the context budget on a line of its own
(the prompt's parts, the answer's reserve, the room left), with what the overflow policy left out
of the prompt or cut said as it happens; while a long prompt is read, how far (a bar on a terminal,
`progress.py`; a line before and after it elsewhere), and each image its projector encodes on a
line of its own, in the window's words ("Encoding image 1 of 2…"). In JSON mode (`json_mode`)
the answer is held back and printed only once its verdict says it is valid — stdout never holds
a cut, broken or retried-over answer — and `json_failed` tells the caller it was not.
"""

from __future__ import annotations

import json
from typing import TextIO, assert_never

from app.cli.progress import Progress
from app.domain.budget import notice
from app.domain.events import (
    CallOutcome,
    Compacted,
    Compacting,
    ContentDelta,
    ContextFit,
    GenerationDone,
    JsonChecked,
    JsonRetried,
    MessageDone,
    MessageStarted,
    ParseIssue,
    PromptRendered,
    RequestSent,
    ResponseReceived,
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
from app.domain.figures import drafts
from app.domain.history import Reply
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.reply import Added, Appended, ReplyBuilder, Thought, Updated
from app.domain.tool_names import MCP_SOURCE, readable
from app.domain.visibility import Lane
from app.errors import ErrorCode

OUTGREW = (
    "the conversation no longer fits the model's context: start a new chat, load the model with"
    " a larger --ctx, or leave older messages out with --overflow drop-middle or rolling"
)


class TerminalReply:
    """Prints one reply at a time from its builder's changes."""

    def __init__(
        self, show_analysis: bool, out: TextIO, err: TextIO, *, json_mode: bool = False
    ) -> None:
        self.show_analysis, self.out, self.err = show_analysis, out, err
        self.json_mode = json_mode
        self.json_failed = False  # JSON mode: the last answer was not valid (or never came)
        self.builder = ReplyBuilder(Reply())
        self._printed: dict[int, int] = {}  # segment index → characters printed
        self.budget: ContextFit | None = None  # the last prompt's context budget
        self.reading: Progress | None = None  # a long prompt being read, on stderr
        self.reading_total = 0

    def _read(self, event: PromptRead) -> None:
        """How far a long prompt is read: a bar redrawn in place on a terminal, one line
        elsewhere (`progress.py`)."""
        if self.reading is None:
            self.reading = Progress(f"Reading {event.total:,} tokens", self.err)
            self.reading_total = event.total
        self.reading(event.done / event.total if event.total else 0.0)

    def begin(self, reply: Reply) -> ReplyBuilder:
        """A new reply (a user turn): its builder, which the history may save as it grows."""
        self.builder, self._printed = ReplyBuilder(reply), {}
        self.json_failed = self.json_mode  # until a valid verdict comes
        return self.builder

    def _encoding(self, event: ImageEncoding) -> None:
        """An image being encoded: its own line (`ImageEncoding.said`), a reading bar cleared
        for it and drawn again by the next `PromptRead`."""
        if self.reading is not None:
            self.reading.abandon()
        self.err.write(f"{event.said()}\n")
        self.err.flush()

    def __call__(self, event: TurnEvent) -> None:
        if isinstance(event, PromptRead):
            self._read(event)
            return
        if isinstance(event, ImageEncoding):
            self._encoding(event)
            return
        if self.reading is not None:  # the prompt is read: the progress line ends
            self.reading.end(f"Read {self.reading_total:,} tokens.")
            self.reading = None
        if isinstance(event, MessageStarted) and event.lane is Lane.ANALYSIS and self.show_analysis:
            self.err.write("[analysis] ")
        for change in self.builder.apply(event):
            if isinstance(change, Thought):
                if self.show_analysis:
                    self.err.write(change.text)
            elif isinstance(change, Added | Appended | Updated):
                self._show(change.index)
        if isinstance(event, MessageDone):
            self._end(event)
        else:
            self._said(event)
        self.out.flush()

    def _shows(self, index: int) -> bool:
        segment = self.builder.reply.segments[index]
        return segment.kind in ("answer", "preamble") and not (
            self.json_mode and segment.kind == "answer"
        )

    def _show(self, index: int) -> None:
        """Print what the segment gained; its trailing whitespace waits for what follows it
        (a message that turns out to be a call spelt out keeps none of it)."""
        if not self._shows(index):
            return
        text = self.builder.reply.segments[index].text
        printed, upto = self._printed.get(index, 0), len(text.rstrip())
        if upto > printed:
            self.out.write(text[printed:upto])
            self._printed[index] = upto

    def _end(self, event: MessageDone) -> None:
        index = self.builder.segments.get(event.index)
        if index is not None and self._shows(index):
            text = self.builder.reply.segments[index].text
            if text:  # (what was held back, then the line's end)
                self.out.write(text[self._printed.get(index, 0) :] + "\n")
                self._printed[index] = len(text)
        elif event.lane is Lane.ANALYSIS and self.show_analysis:
            self.err.write("\n")

    def _said(self, event: TurnEvent) -> None:
        """What is said on stderr about the event (one exhaustive match over the union, by
        group; each group's match is exhaustive too)."""
        match event:
            case ParseIssue() | GenerationDone() | TurnFailed():
                self._said_of_generation(event)
            case ToolCallRequested() | ToolCallDecided() | ToolsRan() | TurnResult():
                self._said_of_tools(event)
            case JsonChecked() | JsonRetried():
                self._said_of_json(event)
            case ContextFit():
                self._said_of_context(event)
            case Compacting():
                plural = "" if event.exchanges == 1 else "s"
                said = f"compacting: summarising {event.exchanges} older exchange{plural}"
                self.err.write(f"[{said} ({event.tokens:,} tokens)…]\n")
            case Compacted():
                said = event.compaction.said()
                self.err.write(f"[compacted: {said}; /compact undo gives them back]\n")
            case (
                PromptRead()
                | ImageEncoding()
                | MessageStarted()
                | ContentDelta()
                | MessageDone()
                | TurnDone()
                | PromptRendered()
                | TokenScored()
                | RequestSent()
                | ResponseReceived()
                | ToolProgress()
            ):
                pass  # shown through the builder's changes, or only in the debug record
            case _:
                assert_never(event)

    def _said_of_generation(self, event: ParseIssue | GenerationDone | TurnFailed) -> None:
        match event:
            case ParseIssue():
                if event.severity.value != "debug":
                    self.err.write(f"[{event.code.value}] {event.message}\n")
            case GenerationDone():
                self.err.write(_timings(event))
                if self.budget is not None:  # where the next turn stands, on its own line
                    self.err.write(_budget(self.budget, event.timings.generated))
            case TurnFailed():
                self.err.write(f"[turn failed] {event.reason}\n")
                if event.code is ErrorCode.CONTEXT:  # overflow: stop
                    self.err.write(f"[{OUTGREW}]\n")
            case _:
                assert_never(event)

    def _said_of_tools(
        self, event: ToolCallRequested | ToolCallDecided | ToolsRan | TurnResult
    ) -> None:
        match event:
            case ToolCallRequested():
                shown = _short(json.dumps(event.arguments, ensure_ascii=False))
                name = readable(event.tool, event.source)  # as the window names it
                mcp = event.source.startswith(MCP_SOURCE)  # its server is in the name
                source = f" from {event.source}" if event.source and not mcp else ""
                said = f"{name}{source} ({event.risk}) {shown}"
                self.err.write(f"[tool {event.call_id}] {said}\n")
            case ToolCallDecided():
                verdict = "runs" if event.allow else "not run"
                self.err.write(f"[tool {event.call_id}] {verdict}: {event.how}\n")
            case ToolsRan():
                for o in event.outcomes:
                    self.err.write(_outcome(o))
            case TurnResult():
                if event.reason != "answer":
                    self.err.write(f"[turn ended: {event.reason}]\n")
            case _:
                assert_never(event)

    def _said_of_json(self, event: JsonChecked | JsonRetried) -> None:
        match event:
            case JsonChecked():
                r = event.result
                code = r.code.value if r.code else ""
                verdict = "valid" if r.valid else f"invalid ({code}) at {r.path or '/'}: {r.error}"
                self.err.write(f"[json {event.target}] {verdict}\n")
                if self.json_mode and event.target == "answer":
                    self._release(r.valid)
            case JsonRetried():
                self.err.write(
                    f"[json retry {event.attempt}] {event.keyword} at {event.path or '/'}:"
                    " generating again from before it\n"
                )
            case _:
                assert_never(event)

    def _said_of_context(self, event: ContextFit) -> None:
        """The budget is kept for the line after the summary; what the overflow policy left
        out or cut is said at once."""
        self.budget = event
        said = notice(event.policy, event.exchanges, event.dropped, event.cuts)
        if said:
            self.err.write(f"[{said.removesuffix('.')}]\n")

    def _release(self, valid: bool) -> None:
        """JSON mode's answer: printed once, whole, when it is valid."""
        self.json_failed = not valid
        answers = [s.text for s in self.builder.reply.segments if s.kind == "answer"]
        if valid and answers:
            self.out.write(answers[-1] + "\n")


def _timings(event: GenerationDone) -> str:
    t = event.timings
    restored = f" from {t.restored_from}" if t.prompt_restored else ""
    drafted = drafts(t.drafted, t.accepted)  # only where speculative decoding drafted
    n = len(t.image_tokens)  # the prompt's images, each as the tokens it became
    images = f"; {n} image{'s' * (n != 1)} as {sum(t.image_tokens)} tokens" if n else ""
    return (
        f"[{event.reason.value}: {t.generated} tokens,"
        f" first after {t.first_token_ms:.0f} ms,"
        f" {t.decode_tokens_per_s:.1f} tok/s; prompt {t.prompt_evaluated} evaluated,"
        f" {t.prompt_reused} reused, {t.prompt_restored} restored{restored}{images}"
        f"{f'; {drafted}' if drafted else ''}]\n"
    )


def _budget(fit: ContextFit, generated: int) -> str:
    """The context budget once the answer joined the history, as a line of its own."""
    return f"[{fit.budget.grown(generated).sentence(fit.policy)}]\n"


def _outcome(o: CallOutcome) -> str:
    said = json.dumps(o.content, ensure_ascii=False) if o.ok else f"{o.error_code}: {o.error}"
    return f"[tool {o.call_id}] {'ok' if o.ok else 'error'} {_short(said)}\n"


def _short(text: str) -> str:
    return text if len(text) <= 400 else text[:400] + "…"


__all__ = ["TerminalReply"]
