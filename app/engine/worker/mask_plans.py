"""How one token bitmask is applied to llama.cpp's candidate array, worked out once per mask.

Guarantees: a `Plan` names either the allowed ids (when at most half the vocabulary is
allowed: the array is cut to them) or the disallowed ids (the rest: those get -inf), so the
application touches the fewer; the ids are read from the nonzero words or bytes only, with
numpy's bool-view nonzero, never a loop over the vocabulary in Python; a mask with many
allowed that comes back within the generation is recognised by its allowed count and then
compared word for word, never read bit by bit again; `apply` writes a plan (or one forced id)
into the candidate array in place.
"""

from __future__ import annotations

import ctypes
from typing import Any, NamedTuple

import numpy as np

# llama.cpp's `llama_token_data`: what its candidate array holds per token
TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
_ROW = np.dtype((np.void, TOKEN_DATA.itemsize))  # one entry as plain bytes (fast to move)


def _set_bits(words: np.ndarray, picked: np.ndarray, n: int) -> np.ndarray:
    """The token ids (below `n`) of the set bits of `words[picked]` (32-bit words); numpy's
    fast nonzero runs on bool views (on integers it is several times slower)."""
    unpacked = np.unpackbits(words[picked].view(np.uint8), bitorder="little")
    bits = np.flatnonzero(unpacked.view(np.bool_))
    ids: np.ndarray = picked[bits >> 5] * 32 + (bits & 31)
    return ids[ids < n]


class Plan(NamedTuple):
    """What one mask does to the candidates: keep only `ids` (few allowed), or put -inf at
    `ids` (few disallowed) — whichever touches fewer."""

    keep: bool
    ids: np.ndarray


class Plans:
    """How each mask is applied. Few allowed: their ids, read from the nonzero words only.
    Many allowed: the disallowed ids — a string's mask comes back at each of its tokens, and
    the same schema's strings share theirs, so such a mask met again is only compared (its
    allowed count first, then its words), never read bit by bit again. After a decode every
    cache is cold: each pass over the mask counts, so as few are made as the mask allows."""

    SIZE = 8

    def __init__(self, n_vocab: int) -> None:
        self._n = n_vocab
        self._recent: list[tuple[int, np.ndarray, Plan]] = []  # allowed count, words, plan

    def of(self, mask: np.ndarray) -> Plan:
        words = mask.view(np.uint32)
        some = np.flatnonzero(words != 0)
        if len(some) * 64 <= self._n:  # at most half the vocabulary allowed, surely
            return Plan(True, _set_bits(words, some, self._n))
        count = int(np.bitwise_count(words[some]).sum())
        if count * 2 <= self._n:
            return Plan(True, _set_bits(words, some, self._n))
        for i, (seen, kept, plan) in enumerate(self._recent):
            if seen == count and np.array_equal(kept, words):
                if i:
                    self._recent.insert(0, self._recent.pop(i))
                return plan
        flipped = ~words
        plan = Plan(False, _set_bits(flipped, np.flatnonzero(flipped != 0), self._n))
        self._recent.insert(0, (count, words.copy(), plan))
        del self._recent[self.SIZE :]
        return plan


def only(token: int) -> Plan:
    """The plan that allows `token` alone (a forced ending's next id)."""
    return Plan(True, np.array([token], dtype=np.intp))


class _Array(ctypes.Structure):
    """llama.cpp's `llama_token_data_array`, its data pointer read as a plain address."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("size", ctypes.c_size_t),
        ("selected", ctypes.c_int64),
        ("sorted", ctypes.c_bool),
    ]


_ARRAY_P = ctypes.POINTER(_Array)
_views: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}  # the last array seen


def _view(address: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidate array at `address` as whole entries and as its logit column (made once
    per address and size: llama.cpp hands the same array at every step)."""
    key = (address, n)
    found = _views.get(key)
    if found is None:
        raw = (ctypes.c_char * (n * TOKEN_DATA.itemsize)).from_address(address)
        candidates = np.frombuffer(memoryview(raw), dtype=TOKEN_DATA, count=n)
        found = (candidates.view(_ROW), candidates["logit"])
        _views.clear()
        _views[key] = found
    return found


def apply(array_p: Any, n_vocab: int, plan: Plan) -> None:
    """`plan` on llama.cpp's candidate array (a `llama_token_data_array *`): when it keeps few
    ids they are moved to the front (in id order) and the array is cut to them, so every
    sampler after this one sees those few instead of the whole vocabulary; else its ids get
    -inf in place. An array that is not the whole vocabulary in id order is masked entry by
    entry, by id. A plan that allows nothing (the matcher failed: its consume says so after)
    leaves the array as it is, never empty. (Each step runs with every cache cold from the
    decode before it, so the fewest calls do it: one id is moved by a single memmove.)"""
    array = ctypes.cast(array_p, _ARRAY_P).contents
    address, n, ids = array.data, array.size, plan.ids
    if plan.keep and not len(ids):
        return
    if n == n_vocab and plan.keep and len(ids) == 1:
        ctypes.memmove(address, address + int(ids[0]) * TOKEN_DATA.itemsize, TOKEN_DATA.itemsize)
        array.size, array.sorted = 1, False
        return
    rows, logits = _view(address, n)
    if n != n_vocab:
        listed = np.isin(rows.view(TOKEN_DATA)["id"], ids)
        logits[~listed if plan.keep else listed] = -np.inf
    elif not plan.keep:
        logits[ids] = -np.inf
    else:
        rows[: len(ids)] = rows[ids]  # position i holds token i: ids are positions
        array.size, array.sorted = len(ids), False
