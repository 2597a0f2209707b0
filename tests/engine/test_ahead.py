"""The helper thread that works out next masks: jobs run in order, off the caller's thread,
and a job's value or error reaches whoever waits for it (any number of times)."""

from __future__ import annotations

import threading

import pytest

from app.engine.worker.ahead import ahead


def test_jobs_run_in_order_on_the_helper_thread() -> None:
    ran: list[tuple[int, str]] = []
    gate = threading.Event()

    def job(i: int) -> int:
        gate.wait(5)
        ran.append((i, threading.current_thread().name))
        return i * i

    jobs = [ahead().submit(lambda i=i: job(i)) for i in range(5)]  # type: ignore[misc]
    gate.set()
    assert [j.result() for j in jobs] == [0, 1, 4, 9, 16]
    assert [i for i, _ in ran] == [0, 1, 2, 3, 4]
    assert {name for _, name in ran} == {"mask-ahead"}
    assert jobs[2].result() == 4  # a second wait gives the same at once


def test_an_error_reaches_the_waiter_and_the_helper_goes_on() -> None:
    def broken() -> int:
        raise ValueError("no mask")

    failed = ahead().submit(broken)
    after = ahead().submit(lambda: 7)
    with pytest.raises(ValueError, match="no mask"):
        failed.result()
    with pytest.raises(ValueError, match="no mask"):
        failed.result()
    assert after.result() == 7
