"""The worker's end of the pipe: one reader thread, requests in order, cancels seen at once.

Guarantees: one thread reads the pipe, so a `Cancel` is filed the moment it arrives (it is seen
between two decode steps, or two graph nodes of a prompt, of the request it names);
`head`/`pop` hand the other requests over in the order they were sent; a quick question
(`answers_now` says which: tokens and the vocabulary, which only read the model's vocabulary)
is answered on the reader thread at once, beside a decode step — unless a load or a shutdown
is waiting or under way (`hold`), when it waits its turn like any request, so that it is
answered by the model loaded before it; a `Cancel` for a request that is over is forgotten;
replies from either thread go out whole, one at a time, after llama.cpp's log lines gathered
since the last reply (`send`); the app gone (end of the pipe), or a quick answer that failed,
is an `EOFError` for the next `head` (the worker ends; the app sees it and starts another).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

from app.engine.protocol import (
    Cancel,
    FromWorker,
    LoadRequest,
    NativeLog,
    Request,
    ShutdownRequest,
)


class Inbox:
    """One worker's pipe."""

    def __init__(
        self,
        conn: Connection,
        gathered: Callable[[], list[tuple[int, str]]],
        answers_now: Callable[[Request], bool] = lambda _request: False,
        answer: Callable[[Request], None] = lambda _request: None,
    ) -> None:
        self.conn = conn
        self._gathered = gathered
        self._answers_now, self._answer = answers_now, answer
        self._waiting: collections.deque[Request] = collections.deque()
        self._cancels: set[int] = set()
        self._changed = threading.Condition()
        self._sending = threading.Lock()
        self._closed = False
        self.hold = False  # a load or shutdown under way: quick questions wait their turn
        self.answering = threading.Lock()  # held by a quick answer, and by a load or shutdown
        threading.Thread(target=self._read, name="worker-inbox", daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                message = self.conn.recv()
                if isinstance(message, Cancel):
                    with self._changed:
                        self._cancels.add(message.request)
                    continue
                with self.answering:  # no load starts while it is answered
                    with self._changed:
                        now = self._answers_now(message) and not self._held()
                        if not now:
                            self._waiting.append(message)
                            self._changed.notify_all()
                    if now:
                        self._answer(message)
        except BaseException:  # the app gone, or an answer that failed: the worker ends
            with self._changed:
                self._closed = True
                self._changed.notify_all()

    def _held(self) -> bool:
        return self.hold or any(
            isinstance(r, (LoadRequest, ShutdownRequest)) for r in self._waiting
        )

    def next(self) -> Request:
        """The next request (blocks); `EOFError` when the app went away."""
        self.head(block=True)
        return self.pop()

    def head(self, block: bool) -> Request | None:
        """The first request not yet taken, left in place (None: none, without `block`)."""
        with self._changed:
            while block and not self._waiting and not self._closed:
                self._changed.wait()
            if self._waiting:
                return self._waiting[0]
            if self._closed:
                raise EOFError
            return None

    def pop(self) -> Request:
        """Take the first request (`head` said it is there); a load or a shutdown holds the
        quick questions until the worker clears `hold`."""
        with self._changed:
            request = self._waiting.popleft()
            if isinstance(request, (LoadRequest, ShutdownRequest)):
                self.hold = True
            return request

    def cancelled(self, request: int) -> bool:
        """Whether `request` was cancelled."""
        return request in self._cancels

    def done(self, request: int) -> None:
        """`request` is over: a late cancel for it means nothing."""
        with self._changed:
            self._cancels.discard(request)

    def send(self, message: FromWorker) -> None:
        """Send `message`, after the llama.cpp log lines gathered since the last one."""
        with self._sending:
            lines = self._gathered()
            if lines:
                self.conn.send(NativeLog(tuple(lines)))
            self.conn.send(message)
