"""Work done beside the caller on one helper thread, waited for at the lowest cost.

Guarantees: `Ahead.submit(work)` hands `work` to the process's one helper thread (a daemon,
made on first use) and returns a `Pending` at once; jobs run one at a time, in the order
given; `Pending.result()` waits for its job and gives its value or raises its error. Waiting
on a finished job is one lock acquire — it happens in llama.cpp's sampler callback, where
every cache is cold from the decode before it and each extra call costs.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """One job: its value once the helper ran it."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._done = threading.Lock()
        self._done.acquire()  # released by the helper once the job ran
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the waiter, whatever it is
            self._error = exc
        finally:
            self._done.release()

    def result(self) -> T:
        self._done.acquire()
        self._done.release()  # a second wait returns at once
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set: the job ran without error


class Ahead:
    """The helper thread and its queue of jobs."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Pending[object]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="mask-ahead", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._jobs.get().run()

    def submit(self, work: Callable[[], T]) -> Pending[T]:
        job = Pending(work)
        self._jobs.put(job)  # type: ignore[arg-type]  # the queue holds jobs of any value
        return job


_ONE: list[Ahead] = []


def ahead() -> Ahead:
    """The process's helper (started on first use)."""
    if not _ONE:
        _ONE.append(Ahead())
    return _ONE[0]
