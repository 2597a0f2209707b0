"""The scheduler's decisions, pure: what one step runs, as plain frozen values.

Guarantees:
- Nothing here touches llama.cpp, a cache or a generation: each function reads views of the
  worker's state taken between steps (`Seat`, `Waiting`, `Active`; read, never changed) and
  returns a frozen plan that `scheduler.py` carries out; the same views give the same plan.
- A step is decided in three plans, each carried out before the next is made, as each reads
  what llama.cpp did with the one before:
  `admit`: the queued requests in the order they came — cancelled ones end untouched, one
  starts on the idle sequence `choose` gives it, the rest wait (none of theirs is idle, or a
  generation still evaluates the same prompt: they copy its cache once it is done, `SHARE_MIN`).
  `prelude`: the generations whose request was cancelled end; those whose prompt reached an
  image have it evaluated.
  `batch`: one `llama_decode` batch — each decoding generation's next token and its drafts,
  then prompt chunks in the room left (at most `SHARED_CHUNK` tokens each while others decode,
  never past an image), shared fairly: the prompts wanting least are served first and each gets
  at least an equal share of what is left, so a short prompt that comes while a long one is
  being read is read whole in the next step (it never waits for the long one to end), beside at
  most `SHARED_CHUNK` of each other prompt (that step stays short), and no prompt starves;
  every row in the order of its sequence (llama.cpp splits a batch whose sequences come out of
  order into more passes).
- How many drafts a generation checks is `lookup_length` / `model_length`'s choice, within
  `draft_limit`; which tokens they are comes from the lookup or the draft model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.engine.worker.kv_candidates import common_prefix
from app.engine.worker.speculate import DRAFT_MAX, StepCosts, draft_length
from app.engine.worker.vision import is_image

SHARE_MIN = 64  # tokens another sequence must hold beyond ours for its cache to be copied
SHARED_CHUNK = 64  # prompt tokens per step while other generations decode
PROBE_EVERY = 32  # a draft model idle this many steps drafts a little, to learn again


# --- views: the state a plan reads ------------------------------------------------------


@dataclass(frozen=True)
class Seat:
    """One KV sequence as a plan sees it."""

    id: int
    reserved: bool  # kept for the window's own turn (when the pool reserves any)
    busy: bool
    used: float  # when it was last released (the least recent wins a tie)
    tokens: Sequence[int]  # what its cache holds


@dataclass(frozen=True)
class Waiting:
    """A queued request."""

    request: int
    prompt: Sequence[int]
    reserved: bool
    cancelled: bool


@dataclass(frozen=True)
class Active:
    """A generation under way on sequence `seq`."""

    seq: int
    request: int
    prompt: Sequence[int]
    held: int  # tokens its sequence's cache holds
    todo: Sequence[int]  # prompt tokens still to evaluate
    next: int | None  # sampled, to be fed at the next step
    cancelled: bool = False


# --- admission --------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """Request `request` starts on sequence `seq`."""

    request: int
    seq: int


@dataclass(frozen=True)
class Withdrawn:
    """Request `request` was cancelled while it waited: it ends untouched."""

    request: int


@dataclass(frozen=True)
class Admission:
    """What becomes of each queued request, in the order they came (`waiting`: neither)."""

    decisions: tuple[Start | Withdrawn, ...]
    waiting: tuple[int, ...]


def choose(
    seats: Sequence[Seat], prompt: Sequence[int], reserved: bool, split: bool
) -> Seat | None:
    """The idle sequence for a request: of its kind when the pool is `split` (the reserved ones
    for the window's turn, the others for the rest), the one whose cache holds the longest
    prefix of the prompt (all but its last token), the least recently used among equals."""
    mine = [s for s in seats if not s.busy and (not split or s.reserved == reserved)]
    if not mine:
        return None
    return max(mine, key=lambda s: (common_prefix(s.tokens, prompt[:-1]), -s.used))


def follows(prompt: Sequence[int], seat: Seat, evaluating: Sequence[Sequence[int]]) -> bool:
    """Whether a request for `prompt` should wait for a generation still evaluating one of the
    `evaluating` prompts (the choices of one request): its cache is then copied, not evaluated
    twice."""
    own = common_prefix(seat.tokens, prompt)
    return any(common_prefix(other, prompt) >= own + SHARE_MIN for other in evaluating)


def admit(
    waiting: Sequence[Waiting], seats: Sequence[Seat], active: Sequence[Active], split: bool
) -> Admission:
    """Decide each queued request in turn, each start taking its sequence from those after."""
    busy = {s.id for s in seats if s.busy}
    evaluating = [a.prompt for a in active if a.todo]
    decisions: list[Start | Withdrawn] = []
    waits: list[int] = []
    for req in waiting:
        if req.cancelled:
            decisions.append(Withdrawn(req.request))
            continue
        idle = [s for s in seats if s.id not in busy]
        seat = choose(idle, req.prompt, req.reserved, split)
        if seat is None or follows(req.prompt, seat, evaluating):
            waits.append(req.request)
            continue
        decisions.append(Start(req.request, seat.id))
        busy.add(seat.id)
        evaluating.append(req.prompt)  # its whole prompt is to evaluate (its last token at least)
    return Admission(tuple(decisions), tuple(waits))


def context_refusal(prompt: int, n_ctx: int) -> str:
    """Why a prompt of `prompt` tokens cannot be taken ("" when it fits, with one to answer)."""
    if prompt < n_ctx:
        return ""
    return f"the prompt has {prompt} tokens; the context holds {n_ctx}"


# --- before the batch -------------------------------------------------------------------


@dataclass(frozen=True)
class Prelude:
    """Before the batch: the sequences whose generation ends cancelled, then those whose
    prompt reached an image (evaluated on its own), each in the order they were admitted."""

    cancelled: tuple[int, ...]
    images: tuple[int, ...]


def prelude(active: Sequence[Active]) -> Prelude:
    cancelled = tuple(a.seq for a in active if a.cancelled)
    images = tuple(a.seq for a in active if not a.cancelled and a.todo and is_image(a.todo[0]))
    return Prelude(cancelled, images)


# --- drafts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Draft:
    """Tokens to check after a generation's next one (`kind`: the n-gram that proposed them,
    0 for the draft model)."""

    kind: int = 0
    tokens: tuple[int, ...] = ()


def draft_limit(room: int, n_ctx: int, held: int) -> int:
    """Drafts one generation may check: within the batch's `room` and its context."""
    return min(DRAFT_MAX, room, n_ctx - held - 2)


def lookup_length(proposed: int, rate: float, batch: int, costs: StepCosts, *, always: bool) -> int:
    """How many of the lookup's `proposed` tokens to check (`always`: all of them)."""
    return proposed if always else draft_length(rate, batch, costs, proposed)


def model_length(
    limit: int,
    rate: float,
    batch: int,
    costs: StepCosts,
    *,
    draft_ms: float,
    steps: int,
    always: bool,
) -> int:
    """How many tokens the draft model drafts: what pays, a couple every `PROBE_EVERY` steps
    when nothing does (to learn again), or all it may when `always`."""
    if always:
        return min(DRAFT_MAX, limit)
    length = draft_length(rate, batch, costs, limit, draft_ms)
    if length == 0 and steps % PROBE_EVERY == 0:
        return min(2, limit)
    return length


# --- the batch --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One token of the batch."""

    token: int
    seq: int
    pos: int
    logits: bool  # sampled from


@dataclass(frozen=True)
class Decode:
    """A generation's next token (at position `held`) and the drafts to check after it."""

    seq: int
    held: int
    token: int
    draft: Draft = Draft()

    def rows(self) -> list[Row]:
        tokens = (self.token, *self.draft.tokens)
        return [Row(t, self.seq, self.held + i, True) for i, t in enumerate(tokens)]


@dataclass(frozen=True)
class Chunk:
    """Prompt tokens evaluated from position `held`; `ends`: the prompt's last (sampled from)."""

    seq: int
    held: int
    tokens: tuple[int, ...]
    ends: bool

    def rows(self) -> list[Row]:
        last = len(self.tokens) - 1
        return [
            Row(t, self.seq, self.held + i, self.ends and i == last)
            for i, t in enumerate(self.tokens)
        ]


@dataclass(frozen=True)
class Batch:
    """One step's `llama_decode`: its parts in the order of their sequences, their `rows` in
    that order, and every sequence the step concerns (`stepping`: decoding, or with prompt
    left, in a part or not)."""

    parts: tuple[Decode | Chunk, ...]
    stepping: tuple[int, ...]
    rows: tuple[Row, ...]

    @classmethod
    def of(cls, parts: Sequence[Decode | Chunk], stepping: Sequence[int]) -> Batch:
        rows = tuple(row for part in parts for row in part.rows())
        return cls(tuple(parts), tuple(stepping), rows)

    @property
    def prompting(self) -> bool:
        return any(isinstance(p, Chunk) for p in self.parts)

    def sampled(self) -> dict[int, list[int]]:
        """Each sequence's rows to sample from (indices into `rows`), in order."""
        found: dict[int, list[int]] = {}
        for i, row in enumerate(self.rows):
            if row.logits:
                found.setdefault(row.seq, []).append(i)
        return found


def batch(active: Sequence[Active], drafts: Mapping[int, Draft], n_batch: int, chunk: int) -> Batch:
    """The batch of `n_batch` tokens at most: decodes with their `drafts` (by sequence), then
    chunks of at most `chunk` prompt tokens each (see the guarantees)."""
    by_seq = sorted(active, key=lambda a: a.seq)
    decoding = [a for a in by_seq if a.next is not None]
    width = len(decoding) + sum(len(d.tokens) for d in drafts.values())
    room = n_batch - width
    takes = chunk_sizes([a for a in by_seq if a.todo], room, bool(decoding), chunk)
    parts: list[Decode | Chunk] = []
    for a in by_seq:
        if a.next is not None:
            parts.append(Decode(a.seq, a.held, a.next, drafts.get(a.seq, Draft())))
        elif a.seq in takes:
            take = takes[a.seq]
            parts.append(Chunk(a.seq, a.held, tuple(a.todo[:take]), take == len(a.todo)))
    return Batch.of(parts, [a.seq for a in by_seq if a.next is not None or a.todo])


def chunk_sizes(
    prompting: Sequence[Active], room: int, decoding: bool, chunk: int
) -> dict[int, int]:
    """How many prompt tokens each of `prompting` evaluates (by sequence) in `room`: what each
    wants (its prompt up to an image, at most `chunk`, and `SHARED_CHUNK` while others decode),
    the least wanting first, each at most an equal share of the room still left among those
    still to serve (see the guarantees); one at an image takes none this step. A step that
    reads a prompt to its end (its first token comes after it) reads at most `SHARED_CHUNK`
    of the others, so that token is not held up by a long prompt's full chunk."""
    cap = SHARED_CHUNK if decoding else room
    wants = {
        a.seq: min(next((i for i, t in enumerate(a.todo) if is_image(t)), len(a.todo)), chunk, cap)
        for a in prompting
    }
    ending = {a.seq for a in prompting if 0 < wants[a.seq] == len(a.todo)}
    if ending and len(ending) < len(wants):  # a first token after this step: keep it short
        wants = {s: w if s in ending else min(w, SHARED_CHUNK) for s, w in wants.items()}
    order = sorted((seq for seq, want in wants.items() if want > 0), key=lambda s: (wants[s], s))
    takes: dict[int, int] = {}
    for served, seq in enumerate(order):
        share = max(1, room // (len(order) - served))
        take = min(wants[seq], share, room)
        if take <= 0:
            break
        takes[seq] = take
        room -= take
    return takes
