"""Speculative decoding's choices, pure: prompt lookup's proposals, the acceptance estimate
(drafted and shadowed), what steps cost, and when the policy drafts and how much."""

from __future__ import annotations

from app.engine.worker.speculate import (
    DRAFT_MAX,
    Acceptance,
    Lookup,
    StepCosts,
    draft_length,
    expected_tokens,
)


def test_lookup_proposes_what_followed_the_latest_earlier_copy() -> None:
    lookup = Lookup([1, 2, 3, 4, 5, 9, 9, 1, 2, 3])
    assert lookup.propose(3) == (3, [4, 5, 9])  # "1 2 3" seen before, then "4 5 9"
    lookup.extend([7])
    assert lookup.propose(3) == (0, [])  # "3 7" was never seen
    lookup.extend([1, 2])
    assert lookup.propose(2) == (2, [3, 7])  # the latest copy of "1 2" wins
    assert Lookup([5, 5]).propose(4) == (0, [])  # the last n-gram itself is not "earlier"


def test_lookup_never_proposes_past_the_end() -> None:
    lookup = Lookup([1, 2, 1, 2])
    n, tokens = lookup.propose(10)
    assert n == 2 and tokens == [1, 2]


def test_acceptance_learns_from_drafts_and_from_shadowed_proposals() -> None:
    acceptance = Acceptance()
    start = acceptance.rate(3)
    for _ in range(10):
        acceptance.record(3, 4, 4)
    assert acceptance.rate(3) > 0.9 > start
    for _ in range(20):
        acceptance.record(2, 4, 0)
    assert acceptance.rate(2) < 0.1
    shadow = Acceptance()
    shadow.shadow(2, 3, [7, 8, 9])
    shadow.score([0, 0, 0, 7, 8])  # not all known yet, no mismatch: waits
    assert shadow.rate(2) == start
    shadow.score([0, 0, 0, 7, 8, 5])  # two kept, the third missed
    kept, tried = 1.0 * 0.9 + 2, 2.0 * 0.9 + 3
    assert abs(shadow.rate(2) - kept / tried) < 1e-9


def test_step_costs_interpolate_and_extend() -> None:
    costs = StepCosts()
    costs.record(1, 10.0)
    assert not costs.known()
    costs.record(5, 14.0)
    assert costs.known() and costs.of(3) == 12.0 and costs.of(9) == 18.0


def test_the_policy_drafts_only_where_it_pays() -> None:
    cheap = StepCosts()
    cheap.record(1, 10.0)
    cheap.record(9, 12.0)  # a wide step costs little more (a model bound by its weights)
    assert draft_length(0.9, 1, cheap, 12) > 3
    assert draft_length(0.05, 1, cheap, 12) == 0  # drafts that are never kept: plain decoding
    dear = StepCosts()
    dear.record(1, 10.0)
    dear.record(2, 19.0)  # each token costs nearly a step: nothing to win
    assert draft_length(0.9, 1, dear, 12) == 0
    assert draft_length(0.9, 1, cheap, 12, draft_ms=30.0) == 0  # a slow draft model: no
    assert draft_length(0.9, 1, StepCosts(), 5) == 5  # nothing known: one step to learn
    assert draft_length(0.9, 1, StepCosts(), 50) == DRAFT_MAX
    assert expected_tokens(0.5, 2) == 1.75 and expected_tokens(1.0, 3) == 4.0
