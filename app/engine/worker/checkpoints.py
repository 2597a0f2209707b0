"""Context checkpoints of a sliding-window model: the window cache's part of a sequence's state,
kept at points while a prompt is read, so that a later prompt that leaves this one somewhere
before its end is read again only from the latest point before where it differs.

Why: a sliding-window layer's state holds only the last `window` positions (llama.cpp writes
no more, even with the full-size window cache), so a kept state of a whole prompt can be cut
back by at most a token (`state_layout.cuttable`). A client that edits an earlier message (a
coding agent's environment block, a date in its first user message) would then be read again
from the start once another prompt took its sequence. The whole-attention layers keep every
position, so a kept state of the whole prompt cut back to a point, with that point's window
part laid over it, is the state the read had at that point — as llama-server's context
checkpoints are, but exact (`state_layout.anchored`).

Guarantees:
- A `Checkpoint` is llama.cpp's partial (window-only) state of one sequence when it held its
  first `count` tokens; it is only ever laid over a state of the same read (the sequence's
  own cache, or a kept state taken from that sequence later, whose checkpoints it carries),
  so whole-attention and window cells always come from one evaluation.
- `due` takes one after a prompt chunk: the first time the rest of the prompt fits in one
  chunk (the tail: an edit near the end re-reads at most a chunk more than it must), and
  every `SPACING` tokens before; never at the prompt's end (the kept state of the whole
  prompt covers it) nor under `MIN_COUNT` tokens.
- `thinned` holds a sequence's checkpoints to a limit by dropping the one nearest its
  predecessor (never the newest), so the points stay spread over the prompt.
- `take` and `put` copy a checkpoint out of and into a sequence through llama.cpp's
  `llama_state_seq_*_ext` with `LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY`; `put` lays the cells
  where a fresh evaluation had them and answers whether llama.cpp took them.
- Cost: one checkpoint is `window` cells of every sliding-window layer's keys and values
  (Gemma 3 270M, f16: 512 x 15 layers x 1 KiB = 7.5 MiB; gpt-oss 20B: 128 x 12 x 2 KiB =
  3 MiB); at most `SnapshotSettings.checkpoints` per sequence, and together at most a quarter
  of the snapshots' RAM (`limit`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.worker import state_layout

SPACING = 2048  # tokens between two checkpoints of one read (besides the tail's)
MIN_COUNT = 256  # a shorter prefix is read again in less time than a checkpoint takes


@dataclass(frozen=True)
class Checkpoint:
    """The window cache's part of a sequence's state after its first `count` tokens."""

    count: int
    state: bytes = b""

    @property
    def size(self) -> int:
        return len(self.state)


def due(count: int, todo: int, last: int, chunk: int) -> bool:
    """Whether to take a checkpoint with `count` tokens read and `todo` still to read, the
    latest one at `last` (0: none) and prompts read `chunk` tokens a step at most."""
    if todo <= 0 or count < MIN_COUNT or count <= last:
        return False
    tail = todo <= chunk and count - last > chunk
    return tail or count - last >= SPACING


def thinned(points: Sequence[Checkpoint], limit: int) -> tuple[Checkpoint, ...]:
    """`points` (by count, ascending) held to `limit`: the one nearest its predecessor goes
    first, never the newest."""
    kept = list(points)
    while len(kept) > max(0, limit):
        if len(kept) == 1:
            return ()
        gaps = [kept[i].count - (kept[i - 1].count if i else 0) for i in range(len(kept) - 1)]
        del kept[gaps.index(min(gaps))]
    return tuple(kept)


def latest(points: Sequence[Checkpoint], count: int) -> Checkpoint | None:
    """The latest of `points` taken at or before `count` tokens."""
    found = [p for p in points if p.count <= count]
    return max(found, key=lambda p: p.count) if found else None


def below(points: Sequence[Checkpoint], count: int) -> tuple[Checkpoint, ...]:
    """The points still true of a cache cut back to `count` tokens."""
    return tuple(p for p in points if p.count <= count)


def limit(asked: int, size: int, ram_bytes: int, sequences: int) -> int:
    """How many checkpoints of `size` bytes each of `sequences` may keep: `asked`, within a
    quarter of the snapshots' RAM."""
    if size <= 0:
        return asked
    return max(0, min(asked, (ram_bytes // 4) // (size * max(1, sequences))))


def take(llm: Any, low: Any, seq: int) -> bytes | None:
    """Sequence `seq`'s window state now (None: llama.cpp gave none)."""
    ctx, flags = llm._ctx.ctx, low.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
    size = int(low.llama_state_seq_get_size_ext(ctx, seq, flags))
    if size <= 0:
        return None
    buffer = (ctypes.c_uint8 * size)()
    written = int(low.llama_state_seq_get_data_ext(ctx, buffer, size, seq, flags))
    return ctypes.string_at(buffer, written) if written > 0 else None


def put(llm: Any, low: Any, point: Checkpoint, seq: int, window: int) -> bool:
    """Lay `point` into sequence `seq`'s window cache (its whole-attention cells stay);
    whether llama.cpp took it."""
    laid = state_layout.anchored(point.state, window, whole=False)
    if laid is None:
        return False
    buffer = (ctypes.c_uint8 * len(laid)).from_buffer_copy(laid)
    flags = low.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
    return int(low.llama_state_seq_set_data_ext(llm._ctx.ctx, buffer, len(laid), seq, flags)) > 0
