"""The worker process on real llama.cpp with a tiny gpt-oss GGUF: generation, stops, KV reuse,
cancel, and a worker killed mid-answer."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any

import pytest

from app.domain.events import FinishReason, GenerationDone, TokenStep, TurnFailed
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import WorkerState
from app.harmony import encoding as enc
from app.harmony.renderer import Renderer
from tests.fixed_conversations import fixed_conversations

GREEDY = Sampling(temperature=0.0)
HARMONY_STOPS = (enc.RETURN, enc.CALL, enc.END_OF_TEXT)


def prompt() -> list[int]:
    return Renderer().render(fixed_conversations()["simple"])


def run(client: WorkerClient, ids: list[int], **kw: Any) -> tuple[list[int], Any]:
    tokens, last = [], None
    for event in client.generate(ids, **{"stop_ids": HARMONY_STOPS, "sampling": GREEDY, **kw}):
        if isinstance(event, TokenStep):
            tokens.append(event.token)
        else:
            last = event
    return tokens, last


def test_model_info_and_harmony_vocabulary(tiny_client: WorkerClient) -> None:
    info = tiny_client.info
    assert info is not None and info.n_vocab == enc.N_VOCAB and info.architecture == "gpt-oss"
    from app.engine.local.tokenizer import ModelTokenizer
    from app.templates.harmony import HarmonyTemplate

    tok = ModelTokenizer(tiny_client)
    HarmonyTemplate().check_model(tok)  # raises if any special id disagrees
    specials = [enc.START, enc.END, enc.MESSAGE, enc.CHANNEL, enc.CONSTRAIN, enc.RETURN, enc.CALL]
    assert tok.special_bytes(specials) == [enc.load_encoding().token_bytes(t) for t in specials]


def test_load_reports_progress(tiny_model: Any) -> None:
    seen: list[float] = []
    with WorkerClient() as client:
        client.load(tiny_model, n_ctx=256, n_threads=1, on_progress=seen.append)
        assert client.state is WorkerState.READY
    assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)


def test_greedy_generation_is_reproducible_and_bounded(tiny_client: WorkerClient) -> None:
    first, done = run(tiny_client, prompt(), max_tokens=12)
    again, _ = run(tiny_client, prompt(), max_tokens=12)
    assert first == again
    assert isinstance(done, GenerationDone) and len(first) == done.timings.generated <= 12


def test_a_stop_id_ends_generation_and_is_reported(tiny_client: WorkerClient) -> None:
    free, _ = run(tiny_client, prompt(), max_tokens=5)
    tokens, done = run(tiny_client, prompt(), max_tokens=5, stop_ids=[free[2]])
    assert tokens == free[:3]
    assert done.reason is FinishReason.STOP and done.stop_id == free[2]


def test_follow_up_turn_reuses_the_kv_cache_and_matches_a_fresh_evaluation(tiny_client: WorkerClient, tiny_model: Any) -> None:
    p1 = prompt()
    out1, _done1 = run(tiny_client, p1, max_tokens=8)
    p2 = p1 + out1 + Renderer().encoding.encode_ordinary(" and more")
    out2, done2 = run(tiny_client, p2, max_tokens=8)
    assert done2.timings.prompt_reused >= len(p1)
    assert done2.timings.prompt_evaluated == len(p2) - done2.timings.prompt_reused
    with WorkerClient() as fresh:
        fresh.load(tiny_model, n_ctx=1024, n_threads=1)
        again, done3 = run(fresh, p2, max_tokens=8)
    assert again == out2 and done3.timings.prompt_reused == 0


def test_cancel_stops_and_leaves_the_worker_ready(tiny_client: WorkerClient) -> None:
    cancel = threading.Event()
    tokens: list[int] = []
    last = None
    for event in tiny_client.generate(prompt(), stop_ids=[], sampling=GREEDY, max_tokens=600, cancel=cancel):
        if isinstance(event, TokenStep):
            tokens.append(event.token)
            if len(tokens) == 5:
                cancel.set()
        else:
            last = event
    assert isinstance(last, GenerationDone) and last.reason is FinishReason.CANCELLED
    assert 5 <= len(tokens) < 600
    assert tiny_client.state is WorkerState.READY
    assert run(tiny_client, prompt(), max_tokens=3)[1].reason is FinishReason.LENGTH


def test_abandoning_a_generation_keeps_the_worker_in_step(tiny_client: WorkerClient) -> None:
    stream = tiny_client.generate(prompt(), stop_ids=[], sampling=GREEDY, max_tokens=500)
    next(stream)
    stream.close()
    assert tiny_client.state is WorkerState.READY
    assert run(tiny_client, prompt(), max_tokens=2)[1].timings.generated == 2


def test_prompt_longer_than_the_context_fails_the_turn_clearly(tiny_client: WorkerClient) -> None:
    tokens, last = run(tiny_client, [enc.START] * 2000, max_tokens=2)
    assert tokens == [] and isinstance(last, TurnFailed) and "context holds 1024" in last.reason
    assert tiny_client.state is WorkerState.READY


@pytest.mark.parametrize("sig, words", [(signal.SIGKILL, "SIGKILL"), (signal.SIGABRT, "SIGABRT")])
def test_a_worker_killed_mid_answer_becomes_turn_failed_and_restarts(tiny_model: Any, sig: int, words: str) -> None:
    with WorkerClient() as client:
        client.load(tiny_model, n_ctx=1024, n_threads=1)
        first_pid = client.pid
        tokens, last = [], None
        for event in client.generate(prompt(), stop_ids=[], sampling=GREEDY, max_tokens=600):
            if isinstance(event, TokenStep):
                tokens.append(event.token)
                if len(tokens) == 4:
                    os.kill(first_pid, sig)  # type: ignore[arg-type]
            else:
                last = event
        assert isinstance(last, TurnFailed) and words in last.reason
        assert list(last.partial) == tokens and len(tokens) >= 4
        assert client.state is WorkerState.FAILED
        again, done = run(client, prompt(), max_tokens=3)  # the next request restarts the worker
        assert client.pid != first_pid and client.state is WorkerState.READY
        assert isinstance(done, GenerationDone) and len(again) == 3


def test_async_client_streams_without_blocking_the_loop_and_cancels_on_exit(tiny_model: Any) -> None:
    import asyncio

    from app.engine.local.async_client import AsyncWorkerClient

    async def scenario() -> tuple[list[int], int, WorkerState, list[float]]:
        client = AsyncWorkerClient()
        progress: list[float] = []
        await client.load(tiny_model, n_ctx=512, n_threads=1, on_progress=progress.append)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        tick_task = asyncio.create_task(ticker())
        tokens: list[int] = []
        stream = client.generate(prompt(), stop_ids=[], sampling=GREEDY, max_tokens=500)
        async with contextlib.aclosing(stream):
            async for event in stream:
                if isinstance(event, TokenStep):
                    tokens.append(event.token)
                    if len(tokens) == 6:
                        break  # leaving the block closes the stream, which cancels the generation
        tick_task.cancel()
        state = client.client.state
        await client.close()
        return tokens, ticks, state, progress

    tokens, ticks, state, progress = asyncio.run(scenario())
    assert len(tokens) == 6 and ticks > 0 and progress[-1] == pytest.approx(1.0)
    assert state is WorkerState.READY


def test_llama_cpp_lines_cross_the_pipe_to_the_app_log(tiny_model: Any, tmp_path: Any) -> None:
    """llama.cpp's own log lines reach the app (the debug pane takes them; the `llama` logger
    writes them to the log file) instead of the worker's stderr."""
    import logging

    from app.engine.local.client import WorkerClient

    seen: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Catch()
    logging.getLogger("llama").addHandler(handler)
    logging.getLogger("llama").setLevel(logging.DEBUG)  # llama.cpp's info lines are logged at DEBUG
    try:
        with WorkerClient() as client:
            client.load(tiny_model, n_ctx=256, n_threads=1)
            lines = client.take_log()
    finally:
        logging.getLogger("llama").removeHandler(handler)
    assert lines and seen and set(lines) <= set(seen)
    assert any("gpt-oss" in line or "llama" in line or "model" in line for line in lines), lines[:5]


def test_the_tokenizer_asks_the_worker_once_per_text_and_again_after_a_load(tiny_model: Any) -> None:
    from app.engine.local.tokenizer import MEMO_CHARS, ModelTokenizer

    client = WorkerClient()
    try:
        client.load(tiny_model, n_ctx=256, n_threads=1)
        asked: list[str] = []
        real = client.tokenize

        def counted(text: str, special: bool) -> list[int]:
            asked.append(text)
            return real(text, special)

        client.tokenize = counted  # type: ignore[method-assign]
        tok = ModelTokenizer(client)
        first = tok.tokenize("Hello there, river.", special=False)
        assert first == tok.tokenize("Hello there, river.", special=False) == real("Hello there, river.", False)
        assert asked == ["Hello there, river."]  # the second time, remembered
        tok.tokenize("<|start|>", special=True)
        tok.tokenize("<|start|>", special=False)
        assert asked.count("<|start|>") == 2  # remembered apart: specials parsed or not
        long = "river " * (MEMO_CHARS // 6 + 1)
        tok.tokenize(long, special=False)
        tok.tokenize(long, special=False)
        assert asked.count(long) == 2  # too long to remember: asked each time
        client.load(tiny_model, n_ctx=256, n_threads=1)  # another load: nothing remembered holds
        assert tok.tokenize("Hello there, river.", special=False) == first
        assert asked.count("Hello there, river.") == 2
    finally:
        client.close()
