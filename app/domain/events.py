"""The one event union: every event of a turn that crosses a thread or a process, as an immutable
value.

The worker sends `TokenStep`s and ends with `GenerationDone` or `TurnFailed`; the parser emits
message events (`MessageStarted`, `ContentDelta`, `MessageDone` with its lane, `ParseIssue`,
`TurnDone` with its stop reason) and, while it reads a long prompt, how far it got
(`PromptRead`, after each batch) and each image its projector encodes (`ImageEncoding`; both
live in `app/domain/progress.py`, with the words every frontend says of them); a session says
how the prompt fits the context (`ContextFit`: its budget, and what the overflow policy left
out or cut), what it rendered (`PromptRendered`),
what a remote endpoint was sent and said (`RequestSent`, `ResponseReceived`), JSON mode's retries
(`JsonRetried`: the answer backs up to `kept`) and verdict (`JsonChecked`); the tool host asks
approval for each call (`ToolCallRequested`, `ToolCallDecided`), how far a running call has got
when its tool says (`ToolProgress`), and their results (`ToolsRan`); the turn loop its result
(`TurnResult`). `TurnEvent` is the union every
frontend folds (`app/domain/reply/`, with an exhaustive match). The window's turn source adds
two events about its session, never about the reply (`SessionEvent`): the model's token table
(`VocabularyRead`) and the conversation the turn left (`TurnCommitted`). Only plain values:
they cross threads and processes unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.domain.budget import Budget, Cut, Overflow
from app.domain.compaction import Compaction
from app.domain.messages import Conversation, Message, Role
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.visibility import Lane
from app.errors import ErrorCode


class Severity(StrEnum):
    """How bad a parse issue is: recovered anomalies are warnings."""

    DEBUG = "debug"
    WARNING = "warning"
    ERROR = "error"


class StopReason(StrEnum):
    """Why a turn ended."""

    RETURN = "return"  # `<|return|>`: the final answer is complete
    CALL = "call"  # `<|call|>`: a tool call is ready
    END_OF_TEXT = "end_of_text"  # `<|endoftext|>`
    FOREIGN_ROLE = "foreign_role"  # the model began a message for a role it does not own
    TRUNCATED = "truncated"  # the stream ended without a stop token


@dataclass(frozen=True, slots=True)
class MessageStarted:
    index: int
    role: Role
    name: str | None
    channel: str | None
    recipient: str | None
    content_type: str | None
    lane: Lane


@dataclass(frozen=True, slots=True)
class ContentDelta:
    index: int
    text: str
    lane: Lane


@dataclass(frozen=True, slots=True)
class MessageDone:
    index: int
    message: Message
    lane: Lane
    complete: bool  # False when the stream was cut inside this message
    token_ids: tuple[int, ...]  # the exact generated ids of this message, terminator included


@dataclass(frozen=True, slots=True)
class ParseIssue:
    code: ErrorCode
    message: str
    severity: Severity = Severity.WARNING
    index: int | None = None
    raw: str = ""  # the model's own text the issue stands for (an invalid call's markup)


@dataclass(frozen=True, slots=True)
class TurnDone:
    stop: StopReason
    detail: str = ""


ParseEvent = MessageStarted | ContentDelta | MessageDone | ParseIssue | TurnDone


# --- the worker, the sessions, the tool host -------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenStep:
    """One generated token and when it arrived (ms since the request was sent); with scores
    asked for, its log-probability and the most likely tokens in its place."""

    token: int
    t_ms: float
    logprob: float | None = None
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True, slots=True)
class TokenScored:
    """How likely a generated token was, and what else the model would have said (the debug
    pane's token strip)."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...]
    t_ms: float = 0.0  # when it arrived, ms since its generation's request was sent


@dataclass(frozen=True)
class Timings:
    prompt_tokens: int = 0
    prompt_reused: int = 0  # tokens of the prompt already in the KV cache
    prompt_evaluated: int = 0
    first_token_ms: float = 0.0
    total_ms: float = 0.0
    generated: int = 0
    prompt_restored: int = 0  # tokens of the prompt restored from a KV snapshot
    restored_from: str = ""  # "memory" or "disk" (a snapshot), "" when none was
    drafted: int = 0  # tokens speculative decoding proposed (checked by the model in batches)
    accepted: int = 0  # of those, the tokens the model kept (each one decode step saved)
    image_tokens: tuple[int, ...] = ()  # the prompt's images, each as the tokens it became

    @property
    def decode_tokens_per_s(self) -> float:
        decode_ms = self.total_ms - self.first_token_ms
        return (
            (self.generated - 1) * 1000 / decode_ms if self.generated > 1 and decode_ms > 0 else 0.0
        )


class FinishReason(StrEnum):
    STOP = "stop"  # one of the stop ids
    LENGTH = "length"  # max_tokens
    CONTEXT = "context"  # the context window is full
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class GenerationDone:
    reason: FinishReason
    stop_id: int | None
    timings: Timings


@dataclass(frozen=True)
class TurnFailed:
    """The turn could not go on (the worker died or refused the prompt, the endpoint failed, the
    conversation has no backend): `code` says which, `reason` says it in words, and `partial`
    keeps the ids that had arrived."""

    reason: str
    code: ErrorCode
    partial: tuple[int, ...] = ()


@dataclass(frozen=True)
class JsonResult:
    """Whether a JSON answer is valid for its schema, and where it fails."""

    valid: bool
    value: Any = None
    error: str | None = None
    path: str = ""
    code: ErrorCode | None = None
    keyword: str = ""  # the schema keyword the answer broke ("uniqueItems", "format", …)
    enforced: tuple[str, ...] = ()  # keywords the grammar enforced while generating
    checked_after: tuple[str, ...] = ()  # keywords only the check after verified (with where)


@dataclass(frozen=True)
class JsonRetried:
    """JSON mode backs up: the answer's value at `path` broke `keyword` (checked after the
    grammar); generation goes on from `kept` — the answer's text before that value — with the
    earlier choice there excluded."""

    target: str  # "answer"
    path: str
    keyword: str
    attempt: int  # 1, 2, …
    kept: str


@dataclass(frozen=True)
class PromptRendered:
    """The exact prompt of the generation about to start (for the debug pane)."""

    ids: tuple[int, ...]


@dataclass(frozen=True)
class JsonChecked:
    """JSON mode's verdict on one answer or tool call of the turn."""

    target: str  # "answer", or the tool's name
    result: JsonResult


@dataclass(frozen=True)
class CallOutcome:
    call_id: str
    ok: bool
    content: Any = None
    error_code: str | None = None
    error: str | None = None
    arguments: dict[str, Any] | None = None  # as run, after the user's edits
    decision: str = ""  # how approval went: "asked: allowed", "always allow", "denied", …
    duration_ms: float | None = None  # how long the tool ran (None: it never ran)


@dataclass(frozen=True)
class CallRecord:
    """The audit record of one call."""

    call_id: str
    tool: str
    arguments_sent: str
    outcome: CallOutcome


@dataclass(frozen=True)
class TurnResult:
    conversation: Conversation
    reason: str  # "answer", "loop cap", "no answer"
    records: tuple[CallRecord, ...] = field(default=())


@dataclass(frozen=True)
class ToolCallRequested:
    """The tool host asks whether call `call_id` may run (its card waits for the user);
    `source` is where the tool comes from ("MCP time", a plugin's name; "" for built-ins)."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    risk: str
    source: str = ""


@dataclass(frozen=True)
class ToolCallDecided:
    """The approval's answer: the call runs (with `arguments`, the user's edits included) or
    not; `how` is what the audit record says ("asked: allowed", "denied by policy", …)."""

    call_id: str
    allow: bool
    arguments: dict[str, Any]
    how: str


@dataclass(frozen=True)
class ToolProgress:
    """How far running call `call_id` has got, as its tool says: `done` of `total` (None: the
    tool does not know the total) and a few words (`message`, may be "")."""

    call_id: str
    done: float
    total: float | None = None
    message: str = ""


@dataclass(frozen=True)
class ToolsRan:
    """The outcomes of one batch of calls, as the model will read them."""

    outcomes: tuple[CallOutcome, ...]


@dataclass(frozen=True)
class RequestSent:
    """The request body sent to the endpoint, exactly but for each image's data URL, which is
    shortened to its start and size (the debug pane shows it; the key is not in it: the SDK
    sends that in a header)."""

    endpoint: str
    body: dict[str, Any]


@dataclass(frozen=True)
class ResponseReceived:
    """What the endpoint said about its answer: its id, why it ended, the usage it reported,
    and the log-probabilities of the tokens when they were asked for (the debug pane)."""

    endpoint: str
    response_id: str
    finish_reason: str
    usage: dict[str, int]
    logprobs: tuple[tuple[str, float], ...] = ()
    top: tuple[tuple[tuple[str, float], ...], ...] = ()  # each token's alternatives, in order


@dataclass(frozen=True)
class VocabularyRead:
    """The model's token table (each token's bytes), for the debug pane; read once per model.
    `special`: its special tokens by id, spelled out (a control token is b"" in `table`)."""

    table: tuple[bytes, ...]
    special: tuple[tuple[int, bytes], ...] = ()


@dataclass(frozen=True)
class TurnCommitted:
    """The turn is over: the conversation it left, and where the reply's messages start in it."""

    conversation: Conversation
    start: int


@dataclass(frozen=True)
class ContextFit:
    """How the prompt of the generation about to start fits the context (`budget`), and what
    the conversation's overflow `policy` changed to make it fit: whole exchanges left out of the
    prompt (`exchanges`, `dropped` messages; the transcript keeps them) and tool results or
    documents cut to their share with a visible marker (`cuts`). Sent before every generation;
    `changed` says whether the reply must say something."""

    budget: Budget
    policy: Overflow = Overflow.STOP
    exchanges: int = 0
    dropped: int = 0
    cuts: tuple[Cut, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.cuts)


@dataclass(frozen=True)
class Compacting:
    """The conversation passed the compaction threshold: `exchanges` older exchanges (of
    `tokens` prompt tokens in all) are being summarised before the turn is answered."""

    exchanges: int
    tokens: int


@dataclass(frozen=True)
class Compacted:
    """The conversation was compacted (`app/domain/compaction.py`): from now on its prompt
    carries `compaction`'s summary in place of the exchanges it covers; the messages stay."""

    compaction: Compaction


GenerationEvent = TokenStep | GenerationDone | TurnFailed | PromptRead | ImageEncoding
TurnEvent = (
    PromptRead
    | ImageEncoding
    | MessageStarted
    | ContentDelta
    | MessageDone
    | ParseIssue
    | TurnDone
    | GenerationDone
    | TurnFailed
    | PromptRendered
    | TokenScored
    | JsonChecked
    | JsonRetried
    | RequestSent
    | ResponseReceived
    | ToolCallRequested
    | ToolCallDecided
    | ToolProgress
    | ToolsRan
    | TurnResult
    | ContextFit
    | Compacting
    | Compacted
)
# what the window's turn source yields: the turn's events, then what its session says about
# itself (the reply builder folds only `TurnEvent`: these carry nothing of the reply)
SessionEvent = TurnEvent | VocabularyRead | TurnCommitted
