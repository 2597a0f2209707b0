"""Context checkpoints of sliding-window models, with real llama.cpp on Gemma 3 270M (window 512)
and the tiny gpt-oss (window 128), loaded with the full-size window cache: a prompt read, another
chat takes the one sequence, then the first prompt comes back edited before its end (a coding
agent's first message whose tail changed) — the kept state of the first read is cut back to the
checkpoint before the edit and that checkpoint's window laid over it: only the rest is read, and
the next logits are bit for bit those of the same prompt read from nothing in the same pieces; a
greedy answer equals the one a fresh worker gives. With no checkpoints asked for, the prompt is
read again whole. The policy (when one is taken, which go when there are too many, the memory
bound) is pinned on plain values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.domain.events import GenerationDone, TokenStep
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import N_BATCH, Keep, SnapshotSettings
from app.engine.worker.checkpoints import (
    MIN_COUNT,
    SPACING,
    Checkpoint,
    due,
    latest,
    limit,
    thinned,
)

GREEDY = Sampling(temperature=0.0)
KEEP = Keep("chat-a", "windowed")


def _words(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, count)]


FIRST = _words(1, 1400)  # read in chunks of N_BATCH: the tail's checkpoint at 1280
EDIT_AT = 1300  # where the second prompt leaves the first
SECOND = FIRST[:EDIT_AT] + _words(2, 40)
POINT = (len(FIRST) - 1) // N_BATCH * N_BATCH  # the last chunk boundary before the end


@pytest.fixture(params=["gemma", "tiny gpt-oss"])
def windowed(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("gemma_model" if request.param == "gemma" else "tiny_model")


def _worker(model: Any, checkpoints: int = 8) -> WorkerClient:
    client = WorkerClient()
    client.load(model, n_ctx=2048, n_threads=1, snapshots=SnapshotSettings(checkpoints=checkpoints))
    return client


def _taken_over(client: WorkerClient) -> None:
    """Another chat reads its own prompt on the one sequence."""
    client.evaluate(_words(3, 300), Keep("chat-b", KEEP.template))


def _fresh(client: WorkerClient, old: list[int], new: list[int]) -> np.ndarray:
    """The logits of `old + new` read from nothing: `old`, then `new` on top of it."""
    client.logits([old[0] + 1])
    assert client.logits(old)[0] == 0
    reused, raw = client.logits(old + new)
    assert reused == len(old)
    return np.frombuffer(raw, dtype=np.float32)


def test_an_edit_before_the_end_restores_the_checkpoint_before_it_exactly(windowed: Any) -> None:
    client = _worker(windowed)
    try:
        client.evaluate(FIRST, KEEP)
        _taken_over(client)
        back = client.evaluate(SECOND, KEEP)
        assert (back.reused, back.restored, back.source) == (0, POINT, "memory")
        fresh = _fresh(client, SECOND[:POINT], SECOND[POINT:])
        assert np.array_equal(np.frombuffer(back.logits, dtype=np.float32), fresh)
    finally:
        client.close()


def test_without_checkpoints_the_edited_prompt_is_read_again(gemma_model: Any) -> None:
    client = _worker(gemma_model, checkpoints=0)
    try:
        client.evaluate(FIRST, KEEP)
        _taken_over(client)
        back = client.evaluate(SECOND, KEEP)
        assert back.restored == 0 and back.reused < MIN_COUNT
    finally:
        client.close()


def _answer(client: WorkerClient, prompt: list[int]) -> tuple[list[int], GenerationDone]:
    events = list(client.generate(prompt, stop_ids=[], max_tokens=24, sampling=GREEDY, keep=KEEP))
    done = events[-1]
    assert isinstance(done, GenerationDone), done
    return [e.token for e in events if isinstance(e, TokenStep)], done


def test_a_greedy_answer_after_a_checkpoint_equals_a_fresh_reads(gemma_model: Any) -> None:
    """Generations (the scheduler's read keeps the checkpoints): the second prompt's answer
    after the restore is the answer a worker that reads it from nothing gives."""
    client = _worker(gemma_model)
    try:
        _answer(client, FIRST)
        _taken_over(client)
        restored, done = _answer(client, SECOND)
        assert done.timings.prompt_restored == POINT
    finally:
        client.close()
    fresh_worker = _worker(gemma_model, checkpoints=0)
    try:
        fresh, fresh_done = _answer(fresh_worker, SECOND)
        assert fresh_done.timings.prompt_restored == fresh_done.timings.prompt_reused == 0
    finally:
        fresh_worker.close()
    assert restored == fresh


# --- the policy, on plain values ----------------------------------------------------------


def test_one_is_due_at_the_tail_and_every_spacing_never_at_the_end() -> None:
    chunk = 256
    assert due(1280, 120, 0, chunk)  # the rest fits in a chunk: the tail's
    assert not due(1344, 56, 1280, chunk)  # one tail checkpoint a read
    assert not due(1024, 376, 0, chunk)  # neither the tail nor a spacing away
    assert due(SPACING, 5000, 0, chunk) and not due(SPACING + chunk, 5000, SPACING, chunk)
    assert not due(1400, 0, 0, chunk)  # the prompt's end: its kept state covers it
    assert not due(MIN_COUNT - 1, 10, 0, chunk)


def test_too_many_are_thinned_where_they_crowd_and_the_newest_stays() -> None:
    points = [Checkpoint(n) for n in (2048, 4096, 4400, 6144, 8000)]
    kept = thinned(points, 4)
    assert [p.count for p in kept] == [2048, 4096, 6144, 8000]
    assert [p.count for p in thinned(points, 1)] == [8000]
    assert thinned(points, 0) == ()
    assert latest(kept, 6000) == Checkpoint(4096) and latest(kept, 100) is None


def test_their_memory_is_a_quarter_of_the_ram_at_most() -> None:
    size = 7_870_848  # Gemma 3 270M's, f16
    assert limit(8, size, 2 << 30, 4) == 8
    assert limit(8, size, 64 << 20, 1) == (16 << 20) // size == 2
    assert limit(8, size, 16 << 20, 4) == 0
    assert limit(8, 0, 0, 4) == 8  # none taken yet: its size is not known
