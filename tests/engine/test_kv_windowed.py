"""Sliding-window models remember, exactly, with real llama.cpp on real GGUF files: on Gemma 3 270M
(window 512) and the tiny gpt-oss (window 128), with the full-size window cache they load with, a
restart then a resume restores the conversation from disk, a chat switch A→B→A on one sequence
restores A from memory, and a regenerate that rolls back below the window reuses the live cache
or, once another chat took it, restores the checkpoint kept when the prompt was read; each time
the next logits equal those of a fresh evaluation of the same prompt in the same pieces (the
prompt read from nothing, then the new part), within 1e-3.

With the small window cache nothing is kept and the prompt is evaluated. The last test pins the
reason for `app/engine/worker/state_layout.py`: llama.cpp's restore of a windowed state puts its
cells elsewhere than the evaluation did, and the logits move; laid back, they do not. When that
test fails, llama.cpp restores such states exactly by itself and the workaround can go."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import kvcache
from app.domain.events import GenerationDone
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker.state_layout import anchored

KEY = bytes(range(32))  # the install's snapshot key (the app reads it from the keyring)

TOLERANCE = 1e-3
GREEDY = Sampling(temperature=0.0)
WINDOWS = {"gemma": 512, "tiny gpt-oss": 128}


def _words(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, count)]


OLD, NEW = _words(1, 700), _words(2, 30)  # past both windows
KEEP = Keep("chat-a", "windowed")


@pytest.fixture(params=list(WINDOWS))
def windowed(request: pytest.FixtureRequest) -> tuple[Any, int]:
    name = request.param
    path = request.getfixturevalue("gemma_model" if name == "gemma" else "tiny_model")
    return path, WINDOWS[name]


def _worker(model: Any, folder: Path, settings: LoadSettings | None = None) -> WorkerClient:
    client = WorkerClient()
    client.load(model, n_ctx=2048, n_threads=1, settings=settings or LoadSettings(),
                snapshots=SnapshotSettings(str(folder), key=KEY))  # fmt: skip
    return client


def fresh(client: WorkerClient, old: list[int], new: list[int]) -> np.ndarray:
    """The logits of `old + new` read from nothing, in the pieces a restore reads them: `old`,
    then `new` on top of it (llama.cpp's CPU kernels round by the rows of a batch)."""
    client.logits([old[0] + 1])  # nothing in common: the cache starts again
    assert client.logits(old)[0] == 0
    reused, raw = client.logits(old + new)
    assert reused == len(old)
    return np.frombuffer(raw, dtype=np.float32)


def gap(a: bytes, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.frombuffer(a, dtype=np.float32) - b)))


def test_a_restart_then_resume_restores_from_disk_exactly(windowed: tuple[Any, int], tmp_path: Path) -> None:
    model, _ = windowed
    first = _worker(model, tmp_path)
    try:
        first.evaluate(OLD, KEEP)
    finally:
        first.close()
    assert kvcache.files(kvcache.key_root(tmp_path, KEY), KEEP.conversation)
    second = _worker(model, tmp_path)
    try:
        done = second.evaluate(OLD + NEW, KEEP)
        assert (done.restored, done.source, done.reused) == (len(OLD), "disk", 0)
        assert gap(done.logits, fresh(second, OLD, NEW)) < TOLERANCE
    finally:
        second.close()


def test_a_chat_switch_on_one_sequence_restores_from_memory_exactly(windowed: tuple[Any, int], tmp_path: Path) -> None:
    model, _ = windowed
    client = _worker(model, tmp_path)
    try:
        client.evaluate(OLD, KEEP)
        client.evaluate(_words(3, 300), Keep("chat-b", KEEP.template))  # B takes the one sequence
        back = client.evaluate(OLD + NEW, KEEP)
        assert (back.restored, back.source) == (len(OLD), "memory")
        assert gap(back.logits, fresh(client, OLD, NEW)) < TOLERANCE
    finally:
        client.close()


def _answer(client: WorkerClient, prompt: list[int], n: int) -> GenerationDone:
    events = list(client.generate(prompt, stop_ids=[], max_tokens=n, sampling=GREEDY, keep=KEEP))
    done = events[-1]
    assert isinstance(done, GenerationDone) and done.timings.generated == n
    return done


def test_a_regenerate_below_the_window_is_exact_live_and_restored(windowed: tuple[Any, int], tmp_path: Path) -> None:
    """An answer longer than the window, then the same prompt again (a regenerate): the live
    cache rolls back past the window; after another chat took the sequence, the checkpoint kept
    when the prompt was read is restored."""
    model, window = windowed
    client = _worker(model, tmp_path)
    try:
        _answer(client, OLD, window + 8)
        again = client.evaluate(OLD, KEEP)
        assert again.reused == len(OLD) - 1 and again.restored == 0
        assert gap(again.logits, fresh(client, OLD[:-1], OLD[-1:])) < TOLERANCE
        _answer(client, OLD, window + 8)
        client.evaluate(_words(3, 300), Keep("chat-b", KEEP.template))
        back = client.evaluate(OLD, KEEP)
        assert (back.restored, back.source) == (len(OLD) - 1, "memory")
        assert gap(back.logits, fresh(client, OLD[:-1], OLD[-1:])) < TOLERANCE
    finally:
        client.close()


def test_the_small_window_cache_keeps_nothing_and_evaluates_exactly(gemma_model: Any, tmp_path: Path) -> None:
    client = _worker(gemma_model, tmp_path, LoadSettings(swa_full=False))
    try:
        client.evaluate(OLD, KEEP)
        client.evaluate(_words(3, 300), Keep("chat-b", KEEP.template))
        back = client.evaluate(OLD + NEW, KEEP)
        assert (back.restored, back.reused) == (0, 0)
        assert gap(back.logits, fresh(client, OLD, NEW)) < TOLERANCE
    finally:
        client.close()
    assert kvcache.files(kvcache.key_root(tmp_path, KEY)) == []


def test_llama_cpp_still_restores_a_windowed_state_into_other_cells(gemma_model: Any) -> None:
    """Gemma 3's state saved after 700 tokens (its window: 512) with the full-size window cache,
    set again as llama.cpp wrote it: the next logits are not those of the same tokens read
    afresh; laid back where the evaluation had its cells (`anchored`), they are, bit for bit."""
    import llama_cpp
    import llama_cpp.llama_cpp as low

    llm = llama_cpp.Llama(model_path=str(gemma_model), n_ctx=2048, n_batch=256, n_ubatch=256,
                          n_threads=1, verbose=False, swa_full=True, flash_attn=False)  # fmt: skip
    ctx = llm._ctx.ctx
    memory = low.llama_get_memory(ctx)
    new = NEW

    def last() -> np.ndarray:
        row = low.llama_get_logits_ith(ctx, -1)
        return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()

    def cleared() -> None:
        llm.reset()
        low.llama_memory_clear(memory, True)

    def continued(state: bytes) -> np.ndarray:
        cleared()
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        assert low.llama_state_seq_set_data(ctx, buffer, len(state), 0) == len(state)
        llm.input_ids[: len(OLD)] = OLD
        llm.n_tokens = len(OLD)
        llm.eval(new)
        return last()

    cleared()
    llm.eval(OLD)
    size = low.llama_state_seq_get_size(ctx, 0)
    raw = (ctypes.c_uint8 * size)()
    assert low.llama_state_seq_get_data(ctx, raw, size, 0) == size
    state = bytes(raw)
    llm.eval(new)
    truth = last()
    laid = anchored(state, 512)
    assert laid is not None
    assert float(np.max(np.abs(continued(laid) - truth))) == 0.0
    assert float(np.max(np.abs(continued(state) - truth))) > 0.1
