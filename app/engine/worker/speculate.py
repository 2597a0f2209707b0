"""Speculative decoding's choices: what to draft (prompt lookup) and how much (the policy).

Guarantees:
- `Lookup` proposes the tokens that followed the latest earlier occurrence of the sequence's
  last `n` tokens (n from `NGRAM_MAX` down to `NGRAM_MIN`), from an index it keeps up to date
  as tokens are added: a proposal costs a few dictionary lookups, never a scan.
- `Acceptance` estimates the chance that a drafted token is kept (one estimate per n-gram
  length for lookup), from every draft the model checked and — at no cost — from every
  proposal that was not drafted, scored against the tokens the model then produced.
- `StepCosts` learns what one decode step costs by the number of tokens in its batch (from
  every step), so that the policy weighs a verification batch by its measured price on this
  machine, not by a rule of thumb; until two sizes are known, the first proposal is drafted
  whole (one step that teaches it the price of a wider batch), and nothing is timed at load.
- `draft_length` drafts only where the expected tokens per second of the whole batch beat
  plain decoding by `MARGIN`: a model that does not copy, or a machine where a wider batch
  costs as much as the tokens it may save, decodes plainly; the draft model's own cost per
  token is counted the same way.
Nothing here changes what is generated: the sampler decides every token (`scheduler.py`).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

NGRAM_MAX = 4
NGRAM_MIN = 2
DRAFT_MAX = 12  # tokens drafted at most in one step
MARGIN = 1.10  # a draft must promise this much more throughput than plain decoding
PRIOR = (1.0, 2.0)  # (kept, tried): a first guess of one in two, soon outweighed
DECAY = 0.9  # how fast old outcomes fade


class Lookup:
    """Prompt lookup over one sequence's tokens (prompt and answer)."""

    def __init__(self, tokens: Sequence[int]) -> None:
        self.tokens: list[int] = []
        self._seen: dict[tuple[int, ...], int] = {}  # n-gram → where its latest copy ended
        self._pending: dict[tuple[int, ...], int] = {}  # the latest, not yet "earlier"
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self._seen.update(self._pending)
            self._pending = {}
            self.tokens.append(int(token))
            end = len(self.tokens)
            for n in range(NGRAM_MIN, NGRAM_MAX + 1):
                if end >= n:
                    self._pending[tuple(self.tokens[end - n :])] = end

    def propose(self, limit: int) -> tuple[int, list[int]]:
        """(n, tokens): what followed the latest earlier copy of the last n tokens, the
        longest n that has one; (0, []) when none has."""
        end = len(self.tokens)
        for n in range(NGRAM_MAX, NGRAM_MIN - 1, -1):
            if end < n:
                continue
            found = self._seen.get(tuple(self.tokens[end - n :]))
            if found is not None:
                return n, self.tokens[found : min(found + limit, end)]
        return 0, []


class Acceptance:
    """How likely a drafted token is kept, per kind of proposal (n-gram length)."""

    def __init__(self) -> None:
        self._counts: dict[int, tuple[float, float]] = collections.defaultdict(lambda: PRIOR)
        self._shadow: tuple[int, int, list[int]] | None = None  # (kind, at, tokens) to score

    def rate(self, kind: int) -> float:
        kept, tried = self._counts[kind]
        return kept / tried if tried > 0 else 0.0

    def record(self, kind: int, drafted: int, kept: int) -> None:
        """A draft of `drafted` tokens of which the first `kept` were kept."""
        if drafted <= 0:
            return
        tries = kept + (1 if kept < drafted else 0)
        old_kept, old_tried = self._counts[kind]
        self._counts[kind] = (old_kept * DECAY + kept, old_tried * DECAY + tries)

    def shadow(self, kind: int, at: int, tokens: list[int]) -> None:
        """A proposal not drafted: scored once the tokens after position `at` are known."""
        if self._shadow is None and tokens:
            self._shadow = (kind, at, tokens)

    def score(self, history: Sequence[int]) -> None:
        """Score the waiting proposal against `history` (the sequence's tokens so far)."""
        if self._shadow is None:
            return
        kind, at, tokens = self._shadow
        came = history[at : at + len(tokens)]
        kept = 0
        while kept < len(came) and came[kept] == tokens[kept]:
            kept += 1
        if kept < len(came) or len(came) == len(tokens):
            self.record(kind, min(len(tokens), kept + 1 if kept < len(came) else kept), kept)
            self._shadow = None


class StepCosts:
    """Milliseconds per decode step by the tokens in its batch (a moving average each)."""

    def __init__(self) -> None:
        self._ms: dict[int, float] = {}

    def record(self, size: int, ms: float) -> None:
        old = self._ms.get(size)
        self._ms[size] = ms if old is None else old * 0.8 + ms * 0.2

    def known(self) -> bool:
        return len(self._ms) >= 2

    def of(self, size: int) -> float:
        """The cost of a step of `size` tokens, interpolated (straight beyond the known)."""
        sizes = sorted(self._ms)
        if size in self._ms:
            return self._ms[size]
        below = [s for s in sizes if s < size]
        above = [s for s in sizes if s > size]
        if below and above:
            lo, hi = below[-1], above[0]
        elif len(below) >= 2:
            lo, hi = below[-2], below[-1]
        else:
            lo, hi = above[0], above[1]
        slope = (self._ms[hi] - self._ms[lo]) / (hi - lo)
        return max(self._ms[lo] + slope * (size - lo), self._ms[sizes[0]])


def expected_tokens(rate: float, length: int) -> float:
    """Tokens one step yields with `length` drafted, each kept with `rate` (the first
    mismatch ends it; the model's own token always comes)."""
    if rate >= 1.0:
        return float(length + 1)
    return (1.0 - rate ** (length + 1)) / (1.0 - rate)


def draft_length(
    rate: float, batch: int, costs: StepCosts, limit: int, draft_ms: float = 0.0
) -> int:
    """How many tokens to draft for one sequence in a step of `batch` tokens without it (its
    own next token counted): 0 unless drafting beats plain decoding by `MARGIN`."""
    if limit <= 0:
        return 0
    if not costs.known():
        return min(limit, DRAFT_MAX)  # learn what a wider step costs (once)
    plain = batch / costs.of(batch)
    best, best_rate = 0, plain * MARGIN
    for length in range(1, min(limit, DRAFT_MAX) + 1):
        made = batch - 1 + expected_tokens(rate, length)
        speed = made / (costs.of(batch + length) + draft_ms * length)
        if speed > best_rate:
            best, best_rate = length, speed
    return best
