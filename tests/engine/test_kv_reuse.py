"""Reusing the KV cache is exact on sliding-window models (gpt-oss: 128 tokens, Gemma 3: 512),
with real llama.cpp on real GGUF files: after a rollback of about 1,000 tokens the next
logits equal a fresh evaluation of the same prompt, the reuse figure is what llama.cpp kept,
and a cache that cannot be rolled back is evaluated again, never continued.

Once, llama.cpp's partial removal said yes, the worker reported the prefix as reused, and the
logits were off by up to 5.7 on Gemma: the model answered from a context it never saw."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.domain.events import FinishReason, GenerationDone
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.harmony import encoding as enc

TOLERANCE = 1e-3  # the wrong state was off by 0.08 (tiny gpt-oss) to 5.7 (Gemma)


def _words(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, count)]


def logits_after(client: WorkerClient, history: list[int], prompt: list[int]) -> tuple[int, np.ndarray]:
    """Evaluate `history`, then `prompt` (reusing what it can): the kept count and the logits."""
    client.logits(history)
    reused, raw = client.logits(prompt)
    return reused, np.frombuffer(raw, dtype=np.float32)


def fresh_logits(client: WorkerClient, prompt: list[int]) -> np.ndarray:
    client.logits([prompt[0] + 1])  # nothing in common: the cache starts again
    reused, raw = client.logits(prompt)
    assert reused == 0
    return np.frombuffer(raw, dtype=np.float32)


@pytest.fixture(scope="module")
def tiny_long(tiny_model: Any) -> Iterator[WorkerClient]:
    client = WorkerClient()
    client.load(tiny_model, n_ctx=4096, n_threads=1)
    yield client
    client.close()


@pytest.fixture(scope="module", params=["as loaded", "full-size window cache"])
def gemma_long(gemma_model: Any, request: pytest.FixtureRequest) -> Iterator[WorkerClient]:
    """Gemma as the app loads it (llama.cpp's small window cache, rollbacks across the window
    evaluated again) and with the full-size window cache (rollbacks kept)."""
    client = WorkerClient()
    full = request.param == "full-size window cache"
    client.load(gemma_model, n_ctx=4096, n_threads=1, settings=LoadSettings(swa_full=True if full else None))
    yield client
    client.close()


def _full(client: WorkerClient) -> bool:
    return bool(client.info and client.info.placement and client.info.placement.swa_full)


def test_the_tiny_gpt_oss_drops_a_long_analysis_after_a_final_answer_exactly(tiny_long: WorkerClient) -> None:
    encoding = enc.load_encoding()
    head = encoding.encode_with_specials("<|start|>user<|message|>Explain tides.<|end|><|start|>assistant")
    analysis = encoding.encode_with_specials("<|channel|>analysis<|message|>") + _words(1, 1000)
    final = encoding.encode_with_specials("<|end|><|start|>assistant<|channel|>final<|message|>Gravity.<|return|>")
    generated = head + analysis + final
    # the next prompt keeps the final answer and drops the analysis, as Harmony says
    follow_up = head + encoding.encode_with_specials(
        "<|channel|>final<|message|>Gravity.<|end|><|start|>user<|message|>More?<|end|><|start|>assistant")
    placement = tiny_long.info.placement if tiny_long.info else None
    assert placement is not None and placement.sliding_window == 128 and placement.swa_full
    reused, after = logits_after(tiny_long, generated, follow_up)
    assert reused == len(head) + 1  # the common prefix (head and <|channel|>), as llama.cpp holds it
    assert float(np.max(np.abs(after - fresh_logits(tiny_long, follow_up)))) < TOLERANCE


def test_gemma_regenerates_a_long_answer_from_exactly_its_prompt(gemma_long: WorkerClient) -> None:
    prompt = _words(2, 200)
    answer = _words(3, 1000)
    reused, after = logits_after(gemma_long, prompt + answer, prompt)
    # the last prompt token is evaluated again for its logits; a small window cache no
    # longer holds what the prompt's end attends to: all of it is evaluated again
    assert reused == (len(prompt) - 1 if _full(gemma_long) else 0)
    assert float(np.max(np.abs(after - fresh_logits(gemma_long, prompt)))) < TOLERANCE


def test_gemma_after_an_early_user_message_is_edited(gemma_long: WorkerClient) -> None:
    system, first, rest = _words(4, 30), _words(5, 40), _words(6, 1500)
    edited = system + _words(7, 45) + _words(8, 20)
    reused, after = logits_after(gemma_long, system + first + rest, edited)
    assert reused == (len(system) if _full(gemma_long) else 0)
    assert float(np.max(np.abs(after - fresh_logits(gemma_long, edited)))) < TOLERANCE


def test_a_window_cache_that_cannot_roll_back_is_evaluated_again(gemma_model: Any) -> None:
    """With the full-size cache turned off, the rollback crosses the window: the worker sees it
    from llama.cpp's own positions, evaluates the prompt again, and says 0 reused."""
    client = WorkerClient()
    try:
        info = client.load(gemma_model, n_ctx=4096, n_threads=1, settings=LoadSettings(swa_full=False))
        assert info.placement is not None and not info.placement.swa_full
        history = _words(9, 1200)  # past the 512-token window, and the rollback below it
        prompt = history[:600] + _words(10, 10)
        reused, after = logits_after(client, history, prompt)
        assert reused == 0
        assert float(np.max(np.abs(after - fresh_logits(client, prompt)))) < TOLERANCE
        client.logits(history)  # the timings of a generation say the same
        done = [e for e in client.generate(prompt, stop_ids=[], max_tokens=1,
                                           sampling=Sampling(temperature=0.0)) if isinstance(e, GenerationDone)]
        assert done[0].timings.prompt_reused == 0 and done[0].timings.prompt_evaluated == len(prompt)
    finally:
        client.close()


def test_stop_during_a_long_prompt_evaluation_ends_it_and_the_worker_stays_ready(gemma_long: WorkerClient) -> None:
    prompt = _words(11, 1500)  # three batches and more: seconds to read, stopped after 0.5 s
    gemma_long.logits([1, 2, 3])
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    events = list(gemma_long.generate(prompt, stop_ids=[], max_tokens=4, cancel=cancel))
    done = events[-1]
    assert isinstance(done, GenerationDone) and done.reason is FinishReason.CANCELLED
    assert done.timings.generated == 0  # stopped before the first token
    again = [e for e in gemma_long.generate(prompt, stop_ids=[], max_tokens=2) if isinstance(e, GenerationDone)]
    kept = again[0].timings.prompt_reused
    assert again[0].reason is FinishReason.LENGTH and again[0].timings.generated == 2
    assert kept < len(prompt) - 1  # the evaluation was cut mid-prompt; what was whole is kept


def test_load_settings_reach_llama_cpp(tiny_model: Any) -> None:
    """GPU layers, flash attention and the cache type reach `Llama(...)`: read back from its
    parameters and said by llama.cpp itself in its log (the cache's type)."""
    client = WorkerClient()
    try:
        info = client.load(tiny_model, n_ctx=512, n_threads=1,
                           settings=LoadSettings(gpu_layers=0, kv_type="q8_0", swa_full=False))
        placement = info.placement
        assert placement is not None
        assert (placement.gpu_layers, placement.kv_type, placement.flash_attn, placement.swa_full) == (0, "q8_0", True, False)
        assert placement.words() == "CPU"
        said = "\n".join(client.take_log())
        assert "K (q8_0)" in said and "K (f16)" not in said, said[-2000:]
        info = client.load(tiny_model, n_ctx=512, n_threads=1)  # the defaults: exact reuse
        assert info.placement is not None and info.placement.swa_full and info.placement.kv_type == "f16"
        assert "K (f16)" in "\n".join(client.take_log())
    finally:
        client.close()


@pytest.mark.parametrize("wanted, offload, expected, words", [
    (None, True, 24, "GPU"), (None, False, 0, "CPU"), (-1, True, 24, "GPU"), (0, True, 0, "CPU"),
    (10, True, 10, "GPU 10/24 layers, rest CPU"), (99, True, 24, "GPU"), (10, False, 0, "CPU"),
])
def test_gpu_layers_auto_all_none_or_some(wanted: int | None, offload: bool, expected: int, words: str) -> None:
    from app.engine.worker.placement import llama_arguments, placement_for

    metadata = {"general.architecture": "gpt-oss", "gpt-oss.block_count": 24, "gpt-oss.attention.sliding_window": 128}
    placement = placement_for(LoadSettings(gpu_layers=wanted), metadata, offload)
    assert placement.gpu_layers == expected and placement.words() == words and placement.swa_full
    arguments = llama_arguments(placement)
    assert arguments["n_gpu_layers"] == (-1 if expected == 24 else expected)


def test_the_cli_remembers_load_settings_per_model(tmp_path: Any, tiny_model: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data")}
    run = subprocess.run(
        [sys.executable, "-m", "app", "chat", "--model", str(tiny_model), "--prompt", "Hi", "--max-tokens", "2",
         "--gpu-layers", "0", "--kv-type", "q8_0", "--threads", "1"],
        capture_output=True, text=True, timeout=300, env=env, cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr[-2000:]
    assert "on CPU, 1 threads" in run.stderr
    from app.templates.choices import ChoiceStore

    remembered = ChoiceStore(tmp_path / "config" / "models.json").get(tiny_model)
    assert (remembered.gpu_layers, remembered.kv_type) == (0, "q8_0")
    bad = subprocess.run([sys.executable, "-m", "app", "chat", "--model", str(tiny_model), "--prompt", "Hi",
                          "--gpu-layers", "lots"], capture_output=True, text=True, timeout=300, env=env)
    assert bad.returncode == 2 and "gpu_layers" in bad.stderr, bad.stderr[-1000:]


def test_tokens_come_scored_from_the_logits_they_were_sampled_from(tiny_model: Any) -> None:
    """With scores asked for, each token has its log-probability and the likeliest tokens in
    its place, from llama.cpp's logits; greedy sampling picks the first of them."""
    import math

    from app.domain.events import TokenStep

    client = WorkerClient()
    try:
        client.load(tiny_model, n_ctx=512, n_threads=1)
        steps = [e for e in client.generate([200006, 1428, 200008, 3000, 200007, 200006], stop_ids=[],
                                            sampling=Sampling(temperature=0.0), max_tokens=8, top_logprobs=5)
                 if isinstance(e, TokenStep)]
        assert len(steps) == 8
        for step in steps:
            assert step.logprob is not None and step.logprob <= 0.0 and len(step.top) == 5
            values = [lp for _, lp in step.top]
            assert values == sorted(values, reverse=True) and sum(math.exp(v) for v in values) <= 1.0 + 1e-6
            assert step.top[0][0] == step.token and step.logprob == pytest.approx(values[0])  # greedy
        plain = [e for e in client.generate([200006, 1428], stop_ids=[], max_tokens=3) if isinstance(e, TokenStep)]
        assert all(s.logprob is None and s.top == () for s in plain)  # not asked: nothing computed
    finally:
        client.close()
