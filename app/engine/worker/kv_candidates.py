"""Choosing the kept state to restore for a prompt (pure: token lists and kept values in, the
best candidate out; no llama.cpp).

Guarantees:
- `common_prefix` is how many leading ids two token lists share.
- `Candidate.or_better` prefers the state that holds more of the prompt: cut back to what it
  shares with the prompt where its window allows (`usable`), else to the latest of its
  checkpoints at or before that (`checkpoints.py`), whose window part is then laid over it;
  a state never beats one that holds as much.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engine.worker.checkpoints import Checkpoint, latest


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids `a` and `b` share (list slices compared in C, halving the part
    not yet known to match: it runs over every kept state before each prompt)."""
    x = a if isinstance(a, list) else list(a)
    y = b if isinstance(b, list) else list(b)
    n = min(len(x), len(y))
    if x[:n] == y[:n]:
        return n
    low, high = 0, n  # x[:low] == y[:low]; x[:high] != y[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if x[low:mid] == y[low:mid]:
            low = mid
        else:
            high = mid
    return low


def _none() -> bytes | None:
    return None


@dataclass(frozen=True)
class Candidate:
    """A state that holds the first `shared` tokens of the prompt (`read` gives its state);
    `point`: the checkpoint laid over it once cut back to `shared`; `points`: the checkpoints
    it carries (those at or before `shared` stay true of it)."""

    shared: int
    source: str = ""
    tokens: tuple[int, ...] = ()
    read: Callable[[], bytes | None] = _none
    point: Checkpoint | None = None
    points: tuple[Checkpoint, ...] = ()

    def or_better(
        self,
        wanted: Sequence[int],
        tokens: tuple[int, ...],
        source: str,
        read: Callable[[], bytes | None],
        usable: Callable[[Sequence[int], int], bool],
        points: tuple[Checkpoint, ...] = (),
    ) -> Candidate:
        """This one, or the state of `tokens` when it holds more of `wanted` (see the
        guarantees)."""
        shared = common_prefix(tokens, wanted)  # a state is cut back to what is shared
        if shared <= self.shared:
            return self
        if usable(tokens, shared):
            return Candidate(shared, source, tokens, read, None, points)
        point = latest(points, shared)
        if point is not None and point.count > self.shared:
            return Candidate(point.count, source, tokens, read, point, points)
        return self
