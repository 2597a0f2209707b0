"""The worker protocol: request ids on every message, replies routed to their caller, cancel per
request, refusals as codes — on real pipes and the real worker with a tiny gpt-oss GGUF."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from typing import Any

import pytest

from app.domain.events import FinishReason, GenerationDone, TokenStep, TurnFailed
from app.engine.local.client import WorkerClient
from app.engine.local.router import Router
from app.engine.protocol import (
    Answer,
    Cancel,
    IllegalTransition,
    NativeLog,
    RequestState,
    TokenBatch,
    WorkerState,
    check_request,
    check_transition,
)
from app.errors import ErrorCode, WorkerError
from app.harmony import encoding as enc
from tests.engine.test_engine_worker import GREEDY, HARMONY_STOPS, prompt, run


class _PipeEnd:
    """A process handle over a real pipe whose other end the test plays as the worker."""

    def __init__(self) -> None:
        self.conn, self.worker = mp.Pipe()
        self.is_alive = True

    def alive(self) -> bool:
        return self.is_alive

    def death(self) -> str:
        return "the model worker exited with status 1"


def test_replies_reach_the_caller_that_asked_in_order_whatever_the_interleaving() -> None:
    pipe = _PipeEnd()
    logs: list[NativeLog] = []
    router = Router(pipe, logs.append)  # type: ignore[arg-type]
    first, second = router.new_id(), router.new_id()
    assert first != second
    for message in (
        TokenBatch(second, (TokenStep(7, 1.0),)),
        NativeLog(((20, "a llama.cpp line"),)),
        TokenBatch(first, (TokenStep(1, 1.0),)),
        Answer(second, [4, 2]),
        TokenBatch(first, (TokenStep(2, 2.0),)),
        Answer(first, "done"),
        Answer(999, "for nobody"),
    ):
        pipe.worker.send(message)
    got: dict[int, list[Any]] = {first: [], second: []}
    for request in (first, second, first, first, second):
        reply = None
        while reply is None:
            reply = router.next(request, timeout=1.0)
        got[request].append(reply)
    assert [type(r).__name__ for r in got[first]] == ["TokenBatch", "TokenBatch", "Answer"]
    assert [r.steps[0].token for r in got[first][:2]] == [1, 2]
    assert got[second] == [TokenBatch(second, (TokenStep(7, 1.0),)), Answer(second, [4, 2])]
    assert logs == [NativeLog(((20, "a llama.cpp line"),))]
    assert router.states == {}  # both over: their mailboxes are gone


def test_several_callers_on_threads_each_get_their_own_replies() -> None:
    pipe = _PipeEnd()
    router = Router(pipe)  # type: ignore[arg-type]
    ids = [router.new_id() for _ in range(4)]
    results: dict[int, list[int]] = {}

    def caller(request: int) -> None:
        tokens: list[int] = []
        while True:
            reply = router.next(request, timeout=2.0)
            if isinstance(reply, TokenBatch):
                tokens += [s.token for s in reply.steps]
            elif isinstance(reply, Answer):
                results[request] = tokens
                return

    threads = [threading.Thread(target=caller, args=(r,)) for r in ids]
    for t in threads:
        t.start()
    for step in range(20):
        for r in ids:
            pipe.worker.send(TokenBatch(r, (TokenStep(r * 100 + step, 0.0),)))
    for r in ids:
        pipe.worker.send(Answer(r, None))
    for t in threads:
        t.join(timeout=10)
    assert results == {r: [r * 100 + s for s in range(20)] for r in ids}


def test_a_send_never_waits_behind_a_caller_that_is_reading() -> None:
    """A Stop must reach the worker at once, even while another caller waits for its reply."""
    pipe = _PipeEnd()
    router = Router(pipe)  # type: ignore[arg-type]
    waiting, other = router.new_id(), router.new_id()
    reader = threading.Thread(target=router.next, args=(waiting, 2.0))
    reader.start()
    time.sleep(0.1)  # the reader is inside its two-second poll now
    start = time.perf_counter()
    router.send(Cancel(other))
    sent_s = time.perf_counter() - start
    assert pipe.worker.recv() == Cancel(other)
    pipe.worker.send(Answer(waiting, None))
    reader.join(timeout=5)
    assert sent_s < 0.5 and not reader.is_alive()


def test_a_worker_gone_is_said_in_words() -> None:
    pipe = _PipeEnd()
    router = Router(pipe)  # type: ignore[arg-type]
    request = router.new_id()
    pipe.is_alive = False
    with pytest.raises(WorkerError, match="exited with status 1"):
        router.next(request, timeout=0.01)


def test_the_state_tables_refuse_illegal_moves_with_a_sentence() -> None:
    check_transition(WorkerState.READY, WorkerState.LOADING)
    with pytest.raises(IllegalTransition, match="no model is loaded"):
        check_transition(WorkerState.UNLOADED, WorkerState.READY)
    check_request(RequestState.SENT, RequestState.ANSWERING)
    check_request(RequestState.ANSWERING, RequestState.CANCELLING)
    with pytest.raises(IllegalTransition, match="the request is over"):
        check_request(RequestState.DONE, RequestState.ANSWERING)
    with pytest.raises(IllegalTransition, match="being cancelled"):
        check_request(RequestState.CANCELLING, RequestState.ANSWERING)


def test_a_prompt_that_does_not_fit_is_refused_with_its_code_and_the_worker_stays_ready(
    tiny_client: WorkerClient,
) -> None:
    info = tiny_client.info
    assert info is not None
    tokens, last = run(tiny_client, [enc.START] * (info.n_ctx + 5), max_tokens=4)
    assert tokens == [] and isinstance(last, TurnFailed)
    assert last.code is ErrorCode.CONTEXT and f"the context holds {info.n_ctx}" in last.reason
    assert tiny_client.state is WorkerState.READY
    tokens, last = run(tiny_client, prompt(), max_tokens=4)
    assert len(tokens) == 4 and isinstance(last, GenerationDone)


def test_a_cancel_for_a_request_that_is_over_leaves_the_next_alone(
    tiny_client: WorkerClient,
) -> None:
    router = tiny_client._router
    assert router is not None
    spare = router.new_id()
    router.finish(spare, RequestState.FAILED)
    router.send(Cancel(spare - 1))  # an earlier request, long over
    router.send(Cancel(spare))  # one the worker never saw
    router.send(Cancel(10_000))  # one that never was
    tokens, last = run(tiny_client, prompt(), max_tokens=6)
    assert isinstance(last, GenerationDone) and last.reason is FinishReason.LENGTH
    assert len(tokens) == 6


def test_a_question_asked_while_a_generation_streams_is_answered_to_its_asker(
    tiny_client: WorkerClient,
) -> None:
    """The worker runs one request at a time; the protocol routes both callers' replies."""
    answers: list[list[int]] = []
    started = threading.Event()

    def generation() -> tuple[list[int], Any]:
        tokens: list[int] = []
        last = None
        for event in tiny_client.generate(prompt(), stop_ids=HARMONY_STOPS, sampling=GREEDY, max_tokens=24):
            if isinstance(event, TokenStep):
                tokens.append(event.token)
                started.set()
            else:
                last = event
        return tokens, last

    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.update(result=generation()))
    thread.start()
    assert started.wait(60)
    answers.append(tiny_client.tokenize("hello world", False))
    thread.join(timeout=120)
    tokens, last = out["result"]
    assert isinstance(last, GenerationDone) and len(tokens) == 24
    assert answers == [enc.load_encoding().encode_ordinary("hello world")]
    alone, _ = run(tiny_client, prompt(), max_tokens=24)
    assert tokens == alone  # the question did not disturb the generation
