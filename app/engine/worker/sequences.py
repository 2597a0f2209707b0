"""The worker's KV sequences: one llama.cpp context holds `count` of them, each its own cache.

Guarantees:
- Each `Sequence` knows the tokens its cache holds (positions 0..n-1), and only those.
- `Pool.choose` gives a request an idle sequence it may use (`plan.choose`: the reserved ones
  for the window's own turn, the shared ones for the server's clients; with none reserved,
  any) — the one whose cache already holds the longest prefix of the prompt, the least
  recently used among equals; None when all are busy (the request waits its turn).
- `Pool.prepare` makes the chosen sequence hold the longest prefix of the prompt it can
  without evaluating: its own cache cut back (`rollback`), another sequence's cache copied
  when that one holds at least `SHARE_MIN` more of the prompt (the choices of one request,
  clients with the same instructions), or a snapshot (`kv_snapshots.py`) when it holds more.
  A cache that no longer holds what the kept prefix attends to (a sliding window) is cleared:
  the prompt is evaluated again rather than continued from a state the model never had.
- A sliding-window model's sequence carries the context checkpoints of its read
  (`checkpoints.py`): `checkpoint` takes one after a prompt chunk when one is due; a cut keeps
  those at or before it, a copied cache brings the other sequence's, a cleared one has none.
"""

from __future__ import annotations

import time
from collections.abc import Sequence as Tokens
from dataclasses import dataclass, field
from typing import Any

from app.engine.protocol import Keep
from app.engine.worker import checkpoints
from app.engine.worker.checkpoints import Checkpoint
from app.engine.worker.kv_candidates import common_prefix
from app.engine.worker.kv_snapshots import Restored, Snapshots
from app.engine.worker.plan import SHARE_MIN, Seat, choose


@dataclass
class Sequence:
    """One KV sequence of the context."""

    id: int
    reserved: bool
    tokens: list[int] = field(default_factory=list)
    busy: bool = False
    used: float = 0.0
    checkpoints: tuple[Checkpoint, ...] = ()  # of the read its cache holds (by count)


class Pool:
    """The context's sequences and their caches."""

    def __init__(self, llm: Any, low: Any, count: int, reserved: int, window: int) -> None:
        self.llm, self.low = llm, low
        self.memory = low.llama_get_memory(llm._ctx.ctx)
        self.window = window  # the model's sliding window (0: none)
        self.all = [Sequence(i, i < reserved) for i in range(count)]
        self.reserved = reserved
        self.snapshots: Snapshots | None = None

    def choose(self, prompt: Tokens[int], reserved: bool) -> Sequence | None:
        """The idle sequence for a request (see the guarantees), or None."""
        seat = choose(self.seats(), prompt, reserved, self.reserved > 0)
        return None if seat is None else self.all[seat.id]

    def seats(self) -> tuple[Seat, ...]:
        """The sequences as a plan sees them (their token lists read, not copied)."""
        return tuple(Seat(s.id, s.reserved, s.busy, s.used, s.tokens) for s in self.all)

    def busy(self) -> int:
        return sum(s.busy for s in self.all)

    def prepare(self, seq: Sequence, prompt: list[int], keep: Keep | None) -> tuple[int, Restored]:
        """Make `seq` hold the longest prefix of `prompt` it can (see the guarantees);
        (reused, restored): copied from another sequence counts as reused."""
        reused = self.rollback(seq, prompt)
        reused = max(reused, self._share(seq, prompt, reused))
        if keep is None or self.snapshots is None:
            return reused, Restored(0, "")
        restored = self.snapshots.restore(prompt, reused, keep, seq)
        if restored is None:
            return reused, Restored(0, "")
        return 0, restored

    def rollback(self, seq: Sequence, prompt: Tokens[int]) -> int:
        """Keep the longest cached prefix of `prompt` (all but its last token) that the memory
        really holds; how many tokens were kept."""
        n = common_prefix(seq.tokens, prompt[:-1])
        if n and self.cut(seq, n):
            return n
        self.clear(seq)
        return 0

    def cut(self, seq: Sequence, n: int) -> bool:
        """Drop what `seq` holds past its first `n` tokens; whether it holds those still."""
        if self.low.llama_memory_seq_rm(self.memory, seq.id, n, -1) and self.holds(seq.id, n):
            del seq.tokens[n:]
            seq.checkpoints = checkpoints.below(seq.checkpoints, n)
            return True
        return False

    def clear(self, seq: Sequence) -> None:
        self.low.llama_memory_seq_rm(self.memory, seq.id, -1, -1)
        seq.tokens, seq.checkpoints = [], ()

    def checkpoint(self, seq: Sequence, todo: int, chunk: int) -> None:
        """After a chunk of a prompt (`todo` tokens still to read, `chunk` at most a step):
        keep a context checkpoint of `seq` when one is due (`checkpoints.due`)."""
        snapshots = self.snapshots
        if snapshots is None or not snapshots.checkpoints:
            return
        last = seq.checkpoints[-1].count if seq.checkpoints else 0
        if not checkpoints.due(len(seq.tokens), todo, last, chunk):
            return
        settings, size = snapshots.settings, max((p.size for p in seq.checkpoints), default=0)
        most = checkpoints.limit(settings.checkpoints, size, settings.ram_bytes, len(self.all))
        if most <= 0:
            return
        state = checkpoints.take(self.llm, self.low, seq.id)
        if state is not None:
            point = Checkpoint(len(seq.tokens), state)
            seq.checkpoints = checkpoints.thinned((*seq.checkpoints, point), most)

    def _share(self, seq: Sequence, prompt: Tokens[int], reused: int) -> int:
        """Copy the cache of the sequence that holds the most of `prompt` when it beats ours by
        `SHARE_MIN`; how much `seq` holds now."""
        best, shared = None, reused + SHARE_MIN - 1
        for other in self.all:
            if other is not seq and len(other.tokens) > shared:
                n = common_prefix(other.tokens, prompt[:-1])
                if n > shared:
                    best, shared = other, n
        if best is None:
            return reused
        self.clear(seq)
        self.low.llama_memory_seq_cp(self.memory, best.id, seq.id, -1, -1)
        seq.tokens, seq.checkpoints = list(best.tokens), best.checkpoints
        if self.cut(seq, shared):
            return shared
        self.clear(seq)
        return 0

    def holds(self, seq: int, n: int) -> bool:
        """Whether sequence `seq` holds positions 0..n-1 as far as the model attends to them (a
        sliding-window layer needs only the last `window`): llama.cpp's own positions."""
        low = self.low.llama_memory_seq_pos_min(self.memory, seq)
        high = self.low.llama_memory_seq_pos_max(self.memory, seq)
        needed_from = max(0, n - self.window) if self.window else 0
        return bool(high == n - 1 and 0 <= low <= needed_from)

    def release(self, seq: Sequence) -> None:
        seq.busy, seq.used = False, time.monotonic()
