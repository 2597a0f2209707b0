"""The token mask on llama.cpp's candidate array: at every step of a real JSON-mode answer, on
Gemma 3's real 262,144-token vocabulary and a real llguidance matcher, exactly the tokens the
matcher allows keep their logits — whether the array was cut to the few allowed, or the few
disallowed were set to -inf, or a mask met before was reused — and nothing else changes."""

from __future__ import annotations

import ctypes
import json
from typing import Any

import numpy as np
import pytest

from app.constrain.constraint import json_constraint
from app.engine.worker.mask_plans import TOKEN_DATA
from app.engine.worker.masking import MaskFactory

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "size": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "kind": {"enum": ["plain", "fancy"]},
    },
    "required": ["name", "size", "tags", "kind"],
    "additionalProperties": False,
}
# llguidance reads the vocabulary through llama-cpp-python's older name for this call
pytestmark = pytest.mark.filterwarnings("ignore:llama_token_get_attr is deprecated:DeprecationWarning")

ANSWER = {"name": "Ada Lovelace", "size": 1815, "tags": ["maths", "maths", "engines"], "kind": "fancy"}


@pytest.fixture(scope="module")
def llm(gemma_model: Any) -> Any:
    import llama_cpp

    return llama_cpp.Llama(model_path=str(gemma_model), vocab_only=True, verbose=False)


class Candidates:
    """A candidate array as llama.cpp hands it to the head of the sampler chain: every token,
    in id order, with a logit each."""

    def __init__(self, n: int, seed: int, order: np.ndarray | None = None) -> None:
        import llama_cpp

        rng = np.random.default_rng(seed)
        ids = np.arange(n) if order is None else order
        self.data = np.zeros(len(ids), dtype=TOKEN_DATA)
        self.data["id"] = ids
        self.data["logit"] = rng.standard_normal(len(ids)).astype(np.float32)
        self.before = self.data.copy()
        pointer = self.data.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data))
        self.array = llama_cpp.llama_token_data_array(data=pointer, size=len(ids), selected=-1, sorted=False)
        self.pointer = ctypes.pointer(self.array)

    def kept(self) -> dict[int, float]:
        """Token id → logit for what the samplers after the mask still see."""
        rows = self.data[: self.array.size]
        finite = np.isfinite(rows["logit"])
        return dict(zip(rows["id"][finite].tolist(), rows["logit"][finite].tolist(), strict=True))


def allowed_ids(matcher: Any, n: int) -> set[int]:
    """The matcher's own answer, read bit by bit from its byte mask."""
    bits = np.unpackbits(np.frombuffer(matcher.deep_copy().compute_bitmask(), dtype=np.uint8), bitorder="little")
    return set(np.flatnonzero(bits[:n]).tolist())


@pytest.mark.parametrize("ahead", [False, True], ids=["inline", "worked-out-ahead"])
def test_every_step_keeps_exactly_the_allowed_tokens(llm: Any, ahead: bool) -> None:
    """Each step as the sampler chain runs it (`on_candidates`), the next mask worked out
    inline or on the helper thread while the "decode" runs; a second matcher, never masked,
    follows the same tokens and says what is allowed."""
    n = llm.n_vocab()
    grammar = json_constraint(SCHEMA).grammar
    mask = MaskFactory(llm, use_ahead=ahead).mask(grammar, [llm.token_eos()])
    oracle = MaskFactory(llm).mask(grammar, [llm.token_eos()]).matcher
    tokens = llm.tokenize(json.dumps(ANSWER, separators=(",", ":")).encode(), add_bos=False, special=False)
    cut = written = ahead_used = 0
    seen: dict[frozenset[int], int] = {}
    for step, token in enumerate(tokens):
        expected = allowed_ids(oracle, n)
        candidates = Candidates(n, seed=step)
        mask.on_candidates(candidates.pointer)
        kept = candidates.kept()
        assert set(kept) == expected, f"step {step}"
        assert all(candidates.before["logit"][i] == logit for i, logit in kept.items())  # untouched
        cut += candidates.array.size < n
        written += candidates.array.size == n
        seen[frozenset(expected)] = seen.get(frozenset(expected), 0) + 1
        assert mask.consume(token), f"step {step}: {token} refused"
        assert oracle.consume_token(token)
        ahead_used += mask._pending is not None  # the next mask is under way beside the "decode"
    mask.discard()
    assert mask.finished == oracle.is_stopped()
    assert bool(ahead_used) == ahead
    assert cut and written  # both ways of applying a mask were taken
    assert max(seen.values()) > 1  # and some mask came back (its plan reused)


def mask_after(llm: Any, text: bytes) -> Any:
    """A mask for SCHEMA that has read `text`."""
    mask = MaskFactory(llm).mask(json_constraint(SCHEMA).grammar, [llm.token_eos()])
    for token in llm.tokenize(text, add_bos=False, special=False):
        assert mask.consume(token, ahead=False)
    return mask


def test_a_partial_array_is_masked_by_id(llm: Any) -> None:
    n = llm.n_vocab()
    mask = mask_after(llm, b'{"name":"Ad')
    expected = allowed_ids(mask.matcher, n)
    order = np.random.default_rng(7).permutation(n)[: n // 3]  # a shuffled third of the vocabulary
    candidates = Candidates(n, seed=1, order=order)
    mask.fill()
    mask.restrict(candidates.pointer)
    assert candidates.array.size == len(order)
    assert set(candidates.kept()) == expected & set(order.tolist())


def test_forced_and_banned_tokens(llm: Any) -> None:
    n = llm.n_vocab()
    mask = mask_after(llm, b'{"name":"Ada","size":1')
    allowed = allowed_ids(mask.matcher, n)
    banned = sorted(allowed)[:2]
    mask.ban_next(banned)
    candidates = Candidates(n, seed=2)
    mask.fill()
    mask.restrict(candidates.pointer)
    assert set(candidates.kept()) == allowed - set(banned)

    candidates = Candidates(n, seed=3)  # the ban held for one step only
    mask.fill()
    mask.restrict(candidates.pointer)
    assert set(candidates.kept()) == allowed

    candidates = Candidates(n, seed=4)
    forced = sorted(allowed)[-1]
    mask.restrict(candidates.pointer, forced)
    assert candidates.kept() == {forced: float(candidates.before["logit"][forced])}
