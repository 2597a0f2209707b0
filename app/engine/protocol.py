"""The seam between the app and a model backend, and the messages that cross the worker pipe.

Guarantees:
- Everything here is a plain, picklable value; nothing imports llama.cpp.
- Every message to the worker and every reply from it carries the `request` id it belongs to
  (llama.cpp's own log lines, `NativeLog`, belong to none), so replies are routed to their
  caller and a `Cancel` names the one request it stops. The worker decodes several
  generations at once (`LoadRequest.sequences`), each on its own KV sequence.
- Quick questions to the model are typed requests (`Tokenize`, `TokenTable`, `SpecialBytes`,
  `Specials`, `Logits`; `Embed` to an embedding worker), each answered by one `Answer` or one
  `Refused`.
- A request the worker cannot serve is `Refused` with a code from the one error tree
  (`E-CONTEXT`, `E-GRAMMAR`, `E-NO-MODEL`), never a bare string; the worker stays ready.
- Two state machines, enums with a sentence for each illegal move: `WorkerState` for the
  process (which model it holds) and `RequestState` for each request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, TypeVar

from app.constrain.constraint import Constraint
from app.domain.events import GenerationDone, TokenStep
from app.domain.images import ImagePixels
from app.domain.placement import LoadSettings, Placement
from app.domain.sampling import Sampling
from app.errors import ErrorCode, HarmonyDeskError
from app.kvcache import kv_root, snapshot_key


class IllegalTransition(HarmonyDeskError, RuntimeError):
    """A bug: the client asked for something a state does not allow."""


S = TypeVar("S", bound=StrEnum)


def _checker(allowed: Mapping[S, frozenset[S]], why: Mapping[S, str]) -> Callable[[S, S], None]:
    """One rule for both state tables: a move not in `allowed` raises, saying `why`."""

    def check(current: S, new: S) -> None:
        if new not in allowed[current]:
            raise IllegalTransition(f"cannot go from {current} to {new}: {why[current]}")

    return check


class WorkerState(StrEnum):
    """The worker process: which model it holds."""

    UNLOADED = "unloaded"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


_ALLOWED: dict[WorkerState, frozenset[WorkerState]] = {
    WorkerState.UNLOADED: frozenset({WorkerState.LOADING, WorkerState.FAILED}),
    WorkerState.LOADING: frozenset({WorkerState.READY, WorkerState.UNLOADED, WorkerState.FAILED}),
    WorkerState.READY: frozenset({WorkerState.LOADING, WorkerState.UNLOADED, WorkerState.FAILED}),
    WorkerState.FAILED: frozenset({WorkerState.LOADING, WorkerState.UNLOADED}),
}

_WHY = {
    WorkerState.UNLOADED: "no model is loaded",
    WorkerState.LOADING: "a model is still loading",
    WorkerState.FAILED: "the worker failed and must be restarted by loading a model",
    WorkerState.READY: "a model is loaded and ready",
}

check_transition = _checker(_ALLOWED, _WHY)
"""Raise `IllegalTransition` unless `current → new` is a legal move of the process."""


class RequestState(StrEnum):
    """One request's life: sent, answering (tokens or progress arrive), being cancelled, over."""

    SENT = "sent"
    ANSWERING = "answering"
    CANCELLING = "cancelling"
    DONE = "done"
    FAILED = "failed"


_REQUEST_ALLOWED: dict[RequestState, frozenset[RequestState]] = {
    RequestState.SENT: frozenset(
        {RequestState.ANSWERING, RequestState.CANCELLING, RequestState.DONE, RequestState.FAILED}
    ),
    RequestState.ANSWERING: frozenset(
        {RequestState.ANSWERING, RequestState.CANCELLING, RequestState.DONE, RequestState.FAILED}
    ),
    RequestState.CANCELLING: frozenset(
        {RequestState.CANCELLING, RequestState.DONE, RequestState.FAILED}
    ),
    RequestState.DONE: frozenset(),
    RequestState.FAILED: frozenset(),
}

_REQUEST_WHY = {
    RequestState.SENT: "the request waits for its first reply",
    RequestState.ANSWERING: "the request is being answered",
    RequestState.CANCELLING: "the request is being cancelled",
    RequestState.DONE: "the request is over",
    RequestState.FAILED: "the request failed",
}

check_request = _checker(_REQUEST_ALLOWED, _REQUEST_WHY)
"""Raise `IllegalTransition` unless `current → new` is a legal move of a request."""


# --- values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
    path: str
    n_vocab: int
    n_ctx: int
    n_ctx_train: int
    architecture: str
    n_threads: int
    load_ms: float
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    placement: Placement | None = None  # where llama.cpp put the model, as it reports it
    sequences: int = 1  # answers decoded at once, each with `n_ctx` tokens of context
    speculative: str = "off"  # speculative decoding: "off", "lookup" or "draft"
    projector: str = ""  # the multimodal projector loaded with the model ("": it sees no images)
    image_tokens: int = 0  # what a 512×512 image becomes through that projector


@dataclass(frozen=True)
class Specials:
    """The loaded model's own special ids."""

    bos: int
    eos: int
    add_bos: bool  # whether a prompt starts with `bos`


N_BATCH = 256  # prompt tokens llama.cpp evaluates in one batch

IMAGE_ID = -1
"""An image's place in a request's prompt ids: the n-th is the request's n-th image."""


@dataclass(frozen=True)
class SnapshotSettings:
    """Where the worker keeps KV snapshots on disk ("": RAM only) and how large they may grow,
    on disk and in RAM (the prompt cache's states first; the disk takes what RAM lets go), and
    the key their files are authenticated with (b"": none, and nothing is kept on disk; never
    in a repr); and how many context checkpoints each sequence of a sliding-window model keeps
    while it reads prompts (`app/engine/worker/checkpoints.py`; 0: none; each costs the window's
    keys and values, 7.5 MiB on Gemma 3 270M, and together they take at most a quarter of
    `ram_bytes`)."""

    folder: str = ""
    cap_bytes: int = 2 << 30
    ram_bytes: int = 2 << 30
    key: bytes = field(default=b"", repr=False)
    checkpoints: int = 8

    @classmethod
    def of(cls, cap_gib: int, ram_mib: int = 2048) -> SnapshotSettings:
        """In the cache folder's `kv/`, at most `cap_gib` (the user's setting; 0: RAM only),
        with this install's key (`kvcache.snapshot_key`: read in the app's process, never the
        worker's; none: RAM only), and at most `ram_mib` in RAM."""
        key = snapshot_key() if cap_gib > 0 else None
        folder = str(kv_root()) if key else ""
        return cls(folder, cap_gib << 30, ram_mib << 20, key or b"")


@dataclass(frozen=True)
class Keep:
    """Whose KV state a generation leaves: it is kept after the reply (RAM; on disk for a
    conversation of the history, and for a client's prompt once it leaves RAM) and looked for
    before the prompt is evaluated, among the states of the same tenant only."""

    conversation: str  # the conversation's id, or the tenant's prompt cache (`kvcache.prompt_tag`)
    template: str = ""  # the chat template that rendered the prompt
    tenant: str = ""  # whose states it may be restored from ("": the desktop's user)


# --- to the worker --------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadRequest:
    request: int
    path: str
    n_ctx: int
    n_threads: int
    n_batch: int = N_BATCH
    extra_buffers: bool = False  # llama.cpp's repack/AMX buffers: faster on some CPUs, crashed here
    settings: LoadSettings = field(default_factory=LoadSettings)
    snapshots: SnapshotSettings = field(default_factory=SnapshotSettings)
    sequences: int = 1  # answers decoded at once, each with a context of `n_ctx` tokens
    reserved: int = 0  # of those, kept for `reserved` requests (the window's own turn)
    always_draft: bool = False  # draft all a drafter proposes, whatever it costs (exactness tests)
    projector: str = ""  # the model's multimodal projector (an mmproj GGUF); "": text only


@dataclass(frozen=True)
class GenerateRequest:
    request: int
    prompt_ids: tuple[int, ...]
    stop_ids: tuple[int, ...]
    sampling: Sampling
    max_tokens: int
    grammar: str | None = None  # an llguidance grammar the tokens must follow
    consumed: tuple[int, ...] = ()  # tokens the grammar has already read (a continuation)
    banned: tuple[int, ...] = ()  # not allowed as the first new token (JSON mode's retry)
    closing: str = ""  # how JSON mode ends the answer within `max_tokens` (`app/constrain/closing`)
    top_logprobs: int = 0  # > 0: each token with its log-probability and this many others
    keep: Keep | None = None  # None: no snapshot looked for or kept
    reserved: bool = False  # the window's own turn: on its reserved sequence, never queued
    images: tuple[ImagePixels, ...] = ()  # one for each `IMAGE_ID` in `prompt_ids`, in order

    def constrained(self, constraint: Constraint | None) -> GenerateRequest:
        """This request under JSON mode's `constraint` (its grammar and where it stands)."""
        if constraint is None:
            return self
        return replace(
            self,
            grammar=constraint.grammar,
            consumed=constraint.consumed,
            banned=constraint.banned,
            closing=constraint.closing,
        )


@dataclass(frozen=True)
class Tokenize:
    """`text` as the model's ids (`special`: control-token text becomes control tokens)."""

    request: int
    text: str
    special: bool


@dataclass(frozen=True)
class TokenTable:
    """The bytes of every id, control tokens as b""."""

    request: int


@dataclass(frozen=True)
class SpecialBytes:
    """The bytes of `ids`, control tokens spelled out."""

    request: int
    ids: tuple[int, ...]


@dataclass(frozen=True)
class SpecialIds:
    """The model's `Specials`."""

    request: int


@dataclass(frozen=True)
class Logits:
    """Evaluate `prompt` as a generation would (the same KV reuse); the kept prefix's length
    and the next token's logits (float32 bytes): the exactness check of KV reuse."""

    request: int
    prompt: tuple[int, ...]
    keep: Keep | None = None  # snapshots as a generation uses them (answered as `Evaluated`)


@dataclass(frozen=True)
class Evaluated:
    """How a prompt was evaluated for `Logits`: reused from the live cache, restored from a
    snapshot ("memory" or "disk"), and the next token's logits (float32 bytes)."""

    reused: int
    restored: int
    source: str
    logits: bytes


@dataclass(frozen=True)
class Embed:
    """Pooled, unit-length vectors of `inputs` from an embedding model (its own worker,
    `app/engine/worker/embedding.py`): a text is tokenized with the model's special tokens, a
    token array is taken as it is. Answered by an `Embedded` or a `NotEmbedded`
    (`app/domain/embedding.py`)."""

    request: int
    inputs: tuple[str | tuple[int, ...], ...]


Query = Tokenize | TokenTable | SpecialBytes | SpecialIds | Logits


@dataclass(frozen=True)
class Cancel:
    """Stop request `request` (a generation or a load) as soon as the worker can."""

    request: int


@dataclass(frozen=True)
class ShutdownRequest:
    pass


Request = LoadRequest | GenerateRequest | Query | Embed | ShutdownRequest  # what a worker runs
ToWorker = Request | Cancel


# --- from the worker ------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadProgress:
    request: int
    fraction: float
    stage: str = "weights"  # "projector": the weights are in, the projector is being loaded


@dataclass(frozen=True)
class Loaded:
    request: int
    info: ModelInfo


@dataclass(frozen=True)
class LoadFailed:
    request: int
    stage: str  # "vocabulary" (architecture, hyper-parameters, tokenizer) or "weights"
    message: str
    cancelled: bool = False


@dataclass(frozen=True)
class Started:
    """A generation left the queue: it has a sequence and its prompt is being evaluated."""

    request: int


@dataclass(frozen=True)
class TokenBatch:
    """Tokens sent together over the pipe (the worker batches them; the client yields each)."""

    request: int
    steps: tuple[TokenStep, ...]


@dataclass(frozen=True)
class Finished:
    """A generation's end: why it stopped, and its timings."""

    request: int
    done: GenerationDone


@dataclass(frozen=True)
class Answer:
    """The answer to a `Query`."""

    request: int
    value: Any


@dataclass(frozen=True)
class Refused:
    """The worker could not serve the request; it stays ready for the next one."""

    request: int
    code: ErrorCode
    message: str


@dataclass(frozen=True)
class NativeLog:
    """llama.cpp's own log lines (level, text) since the worker last sent any."""

    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class PromptProgress:
    """How far a generation's prompt is read (`done` of the `total` tokens no cache held), after
    each batch but its last; with `image` (number from 1, of how many), that it reached it."""

    request: int
    done: int
    total: int
    image: tuple[int, int] | None = None


_Generating = Started | PromptProgress | TokenBatch | Finished  # one generation's replies
FromWorker = LoadProgress | Loaded | LoadFailed | _Generating | Answer | Refused
ENDS_REQUEST = (Loaded, LoadFailed, Finished, Answer, Refused)  # the last reply to a request
