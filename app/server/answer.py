"""One answer to one request: the generation run as a job on the engine thread, and what the one
reply builder made of it, as the pieces an OpenAI response is built from.

Guarantees: what the client gets is what the window shows for the same tokens — the answer (and
preambles) from the reply builder's answer and preamble segments, the model's calls from its
tool cards, the analysis (or `<think>` text) only as reasoning, never in the content; a call the
tolerant parser recovered is a tool call, and output it could not read is what the builder kept
of it — never an HTTP 500: markup that was no valid call (not run; the window says so on a
notice) is content, the model's text as it wrote it, in its place, as llama-server and vLLM give
it (the blank space the reader drops after markup given back as a line break before the text
that follows), and the request's log line says it; a stop sequence ends the content before it
(and the generation); log-probabilities are those of the tokens that wrote the answer's text;
the turn is `run_turn`'s, as every frontend's: the prompt is fitted once to the context under
the request's overflow policy, and a prompt that still does not fit is a 400
`context_length_exceeded` with the counts (`ContextTooLong`: the context, the prompt, the
answer's reserve, and what would make it fit) before anything is generated. Under summarise, the
server's kept compaction that applies to the conversation (`app/server/compactions.py`) is the
request's, and each one the turn makes is kept; the answer records the compaction its prompt
carried (made now, or reused) for the usage's `compacted` object. A JSON-mode answer
(`hold_json`) is given out whole once its verdict came — JSON mode may back up and retry a
value, so nothing is streamed that could be taken back.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from app.domain.budget import Overflow
from app.domain.compaction import Compaction
from app.domain.events import (
    Compacted,
    ContentDelta,
    ContextFit,
    GenerationDone,
    JsonChecked,
    MessageStarted,
    TokenScored,
    TurnEvent,
    TurnFailed,
)
from app.domain.history import Reply, Segment
from app.domain.reply import Added, Appended, ReplyBuilder, Thought, Updated
from app.domain.visibility import Lane
from app.engine.request import GenerationRequest
from app.engine.turn.run import TurnRequest, run_turn
from app.errors import SchemaError
from app.server import compactions, request_log
from app.server.asked import Asked
from app.server.compactions import Reused, carried
from app.server.errors import ApiError, ContextTooLong
from app.server.served import ServedModel


@dataclass(frozen=True)
class Scored:
    """An answer token's log-probability, with its likeliest alternatives (text, logprob)."""

    text: str
    logprob: float
    top: tuple[tuple[str, float], ...]


Item = TurnEvent | Scored | Reused  # what a job hands the server's loop


def too_long(fit: ContextFit, asked: Asked) -> ContextTooLong:
    """The 400 for a prompt the context cannot hold, with the counts and what would make it
    fit (the request's own words for leaving older messages out, `Asked.fits_by`)."""
    n_ctx = fit.budget.n_ctx
    if fit.policy is Overflow.STOP:
        hint = f"Here the context holds {n_ctx} tokens: shorten the conversation"
        if asked.fits_by:
            hint += f", or ask for {asked.fits_by} to leave older messages out"
        hint += " (a server started with --compact summarises them)."
    else:
        done = "summarised" if fit.policy is Overflow.SUMMARISE else "left out"
        hint = (
            f"Here the context holds {n_ctx} tokens even with the older exchanges {done}"
            f" (overflow: {fit.policy.value})."
        )
    return ContextTooLong(
        fit.budget.used, n_ctx, fit.budget.reserve, param=asked.prompt_param, hint=hint
    )


def generation_of(served: ServedModel, asked: Asked) -> GenerationRequest:
    """`asked`'s generation, with the kept compaction that applies under summarise."""
    generation = asked.generation
    if generation.overflow is not Overflow.SUMMARISE or generation.compaction is not None:
        return generation
    kept = served.compactions.find(generation.tenant, asked.conversation)
    return dataclasses.replace(generation, compaction=kept) if kept else generation


def job(served: ServedModel, asked: Asked, cancel: threading.Event) -> Callable[[], Iterator[Item]]:
    """The turn, to run on the engine thread through `run_turn` (the declared tools' calls
    come back unrun): its events, `Scored` answer tokens, and the JSON verdicts after; a
    prompt that does not fit once fitted is a 400 before anything is generated."""

    def make() -> Iterator[Item]:
        session = served.session()
        table = session.token_table() if asked.generation.top_logprobs else ()
        top = asked.generation.top_logprobs

        def text(token: int) -> str:
            return table[token].decode("utf-8", errors="replace") if token < len(table) else ""

        generation = generation_of(served, asked)
        turn = TurnRequest(generation, conversation=asked.conversation)
        events = run_turn(session, turn, cancel)
        kept = served.compactions
        try:
            for event in carried(kept, generation.tenant, generation.compaction, events):
                if isinstance(event, ContextFit) and event.budget.used >= event.budget.n_ctx:
                    raise too_long(event, asked)
                if isinstance(event, TokenScored):
                    alternatives = tuple((text(t), lp) for t, lp in event.top[:top])
                    yield Scored(text(event.token), event.logprob, alternatives)
                    continue
                yield event
        except SchemaError as exc:
            param = "response_format" if asked.generation.response_format else "tools"
            raise ApiError(400, exc.message, param=param, code="unsupported_schema") from None

    return make


class StopCut:
    """Text as the client may see it: cut at the first stop sequence (which also stops the
    generation), the tail that could begin one held back until it cannot."""

    def __init__(self, stops: list[str], cancel: threading.Event) -> None:
        self.stops, self.cancel = stops, cancel
        self.held, self.stopped = "", False
        self.matched: str | None = None  # the stop sequence that ended it

    def take(self, text: str) -> str:
        if self.stopped:
            return ""
        pending = self.held + text
        for stop in self.stops:
            at = pending.find(stop)
            if at >= 0:
                self.stopped, self.held, self.matched = True, "", stop
                self.cancel.set()
                return pending[:at]
        keep = max((len(s) for s in self.stops), default=1) - 1
        ready = pending[: len(pending) - keep] if keep else pending
        self.held = pending[len(ready) :]
        return ready

    def flush(self) -> str:
        held, self.held = self.held, ""
        return held


def finish_of(done: GenerationDone | None, stopped: bool) -> str:
    """OpenAI's `finish_reason` for text: `length` when a limit cut it (not a stop sequence)."""
    cut = done is not None and done.reason.value in ("length", "context")
    return "length" if cut and not stopped else "stop"


def usage_of(done: GenerationDone | None, reasoning_tokens: int = 0) -> dict[str, Any]:
    """OpenAI's `usage`: the prompt's tokens (those the KV cache already held as
    `cached_tokens`), the generated ones (`reasoning_tokens` of them the reasoning's)."""
    t = done.timings if done is not None else None
    prompt, generated = (t.prompt_tokens, t.generated) if t is not None else (0, 0)
    cached = t.prompt_reused + t.prompt_restored if t is not None else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": generated,
        "total_tokens": prompt + generated,
        "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
        "completion_tokens_details": {"reasoning_tokens": min(reasoning_tokens, generated)},
    }


@dataclass
class Piece:
    """What one event added to the answer."""

    content: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    scored: list[Scored] = field(default_factory=list)


class Answer:
    """The fold of one answer's events (see the module guarantees)."""

    def __init__(self, stops: list[str], cancel: threading.Event, hold_json: bool = False) -> None:
        self.builder = ReplyBuilder(Reply())
        self.hold_json = hold_json
        self.cut = StopCut(stops, cancel)
        self.content = self.reasoning = ""
        self.calls: list[dict[str, Any]] = []
        self.scored: list[Scored] = []
        self.verdicts: list[JsonChecked] = []
        self.done: GenerationDone | None = None
        self.failed: str | None = None
        self.reasoning_tokens = 0
        self._sent: dict[int, int] = {}  # segment → characters given out
        self._pending: list[Scored] = []  # scored tokens not yet placed in a message
        self._said = ""  # the raw text of the message being written
        self._joined = False  # the next text continues the last one's without a break
        self.compaction: tuple[Compaction, bool] | None = None  # the prompt's, and reused?

    def feed_all(self, items: list[Item]) -> Piece:
        """What a batch of items adds, as one piece."""
        whole = Piece()
        for item in items:
            piece = self.feed(item)
            whole.content += piece.content
            whole.reasoning += piece.reasoning
            whole.calls += piece.calls
            whole.scored += piece.scored
        return whole

    def feed(self, item: Item) -> Piece:
        piece = Piece()
        if isinstance(item, Scored):
            self._pending.append(item)
            return piece
        if isinstance(item, Reused):
            self._compacted(item.compaction, True)
            return piece
        event = item
        self._record(event, piece)
        for change in self.builder.apply(event):
            if isinstance(change, Thought):
                piece.reasoning += change.text
            elif isinstance(change, Added | Appended | Updated):
                self._segment(change.index, piece)
        if isinstance(event, JsonChecked) and event.target == "answer" and self.hold_json:
            self.hold_json = False  # the verdict came: the answer goes out whole
            for index, segment in enumerate(self.builder.reply.segments):
                if segment.kind == "answer" or _unread(segment):
                    self._segment(index, piece)
        self.reasoning += piece.reasoning
        return piece

    def _record(self, event: TurnEvent, piece: Piece) -> None:
        """Keep what `event` says beside the reply: the answer's raw text and the scored
        tokens that wrote it (into `piece` too), the generation's end, a failure, a verdict."""
        if isinstance(event, MessageStarted):
            self._said = ""
        elif isinstance(event, ContentDelta) and event.lane is Lane.ANALYSIS:
            self.reasoning_tokens += 1  # one delta per token that wrote reasoning text
        elif isinstance(event, ContentDelta) and event.lane is Lane.ANSWER:
            self._said += event.text
            if not self.stopped:
                piece.scored = self._released()
                self.scored += piece.scored
        elif isinstance(event, GenerationDone):
            self.done = event
            request_log.noted(event)
        elif isinstance(event, TurnFailed):
            self.failed = event.reason
        elif isinstance(event, JsonChecked):
            self.verdicts.append(event)
        elif isinstance(event, Compacted):
            self._compacted(event.compaction, False)

    def _compacted(self, compaction: Compaction, reused: bool) -> None:
        """The summary the prompt carries, for the usage and the request's log line."""
        self.compaction = (compaction, reused)
        request_log.remarked(f"compacted: {compactions.said(compaction, reused)}")

    def _released(self) -> list[Scored]:
        """The pending tokens that wrote the end of the answer's text: header and control
        tokens before them (which wrote no text of it) are left out."""
        taken: list[Scored] = []
        tail = ""
        for scored in reversed(self._pending):
            if not scored.text or not self._said.endswith(scored.text + tail):
                break
            tail = scored.text + tail
            taken.append(scored)
        self._pending.clear()
        return taken[::-1]

    def _segment(self, index: int, piece: Piece) -> None:
        segment = self.builder.reply.segments[index]
        if segment.kind == "tool" and segment.complete and index not in self._sent:
            self._sent[index] = 1
            name = str(segment.data.get("tool") or "").removeprefix("functions.")
            call = {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": name, "arguments": str(segment.data.get("arguments", ""))},
            }
            self.calls.append(call)
            piece.calls.append(call)
        elif _unread(segment) and not self.hold_json and index not in self._sent:
            self._sent[index] = 1
            request_log.remarked("a call that was not valid, given as text")
            piece.content += self._visible(str(segment.data["raw"]))
            self._joined = True  # the model's text goes on after it, as it wrote it
        elif segment.kind == "preamble" or (segment.kind == "answer" and not self.hold_json):
            sent = self._sent.get(index, 0)
            if len(segment.text) > sent:
                if sent == 0 and self.content + self.cut.held:
                    piece.content += self._visible(self._break(segment.text))
                piece.content += self._visible(segment.text[sent:])
                self._sent[index] = len(segment.text)
                self._joined = False

    def _break(self, text: str) -> str:
        """What goes between the content so far and a new segment's `text`: a paragraph
        between messages; after markup that was no valid call, the line break the reader
        dropped (none when `text` begins with blank space of its own)."""
        if not self._joined:
            return "\n\n"
        return "" if text[:1].isspace() else "\n"

    def _visible(self, text: str) -> str:
        shown = self.cut.take(text)
        self.content += shown
        return shown

    def flush(self) -> str:
        """The content held back, once the answer has ended without a stop sequence."""
        held = self.cut.flush()
        self.content += held
        return held

    @property
    def stopped(self) -> bool:
        return self.cut.stopped

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else finish_of(self.done, self.stopped)

    def usage(self) -> dict[str, Any]:
        """OpenAI's usage, with the `compacted` object when the prompt carried a summary."""
        usage = usage_of(self.done, self.reasoning_tokens)
        if self.compaction is not None:
            usage["compacted"] = compactions.usage(*self.compaction)
        return usage

    def logprobs(self, scored: list[Scored]) -> dict[str, Any]:
        return {
            "content": [
                {
                    "token": s.text,
                    "logprob": s.logprob,
                    "bytes": list(s.text.encode()),
                    "top_logprobs": [
                        {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in s.top
                    ],
                }
                for s in scored
            ],
            "refusal": None,
        }

    def problem(self) -> str | None:
        """Why the answer is not what was asked: a failure, or a JSON verdict against it."""
        if self.failed is not None:
            return self.failed
        bad = [v for v in self.verdicts if not v.result.valid]
        if bad:
            r = bad[0].result
            return f"{bad[0].target}: {r.code.value if r.code else ''} {r.error} {r.path}".strip()
        return None


def _unread(segment: Segment) -> bool:
    """A notice standing for the model's own text: markup that was no valid call."""
    return segment.kind == "notice" and bool(segment.data.get("raw"))


_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dumps(value: Any) -> str:
    """`value` as compact JSON on one line, even for a client that splits lines as
    `str.splitlines` does (the SDKs' event readers): U+0085, U+2028 and U+2029 escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_BREAKS)


__all__ = [
    "Answer",
    "Piece",
    "Scored",
    "StopCut",
    "dumps",
    "finish_of",
    "generation_of",
    "job",
    "too_long",
    "usage_of",
]
