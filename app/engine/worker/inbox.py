"""The worker's end of the pipe: requests in order, cancels noticed while one runs.

Guarantees: `next` hands requests over in the order they were sent; `cancelled(request)` reads
whatever the pipe holds without waiting, so a `Cancel` is seen between two tokens (or two
graph nodes of a prompt) of the request it names, and a request that arrives meanwhile waits
its turn, unread by anyone else; a `Cancel` for a request that is over is forgotten; replies
go out after llama.cpp's log lines gathered since the last reply (`send`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from multiprocessing.connection import Connection

from app.engine.protocol import Cancel, FromWorker, NativeLog, Request, ToWorker


class Inbox:
    """One worker's pipe."""

    def __init__(self, conn: Connection, gathered: Callable[[], list[tuple[int, str]]]) -> None:
        self.conn = conn
        self._gathered = gathered
        self._waiting: collections.deque[Request] = collections.deque()
        self._cancels: set[int] = set()

    def next(self) -> Request:
        """The next request (blocks); `EOFError` when the app went away."""
        self.head(block=True)
        return self._waiting.popleft()

    def head(self, block: bool) -> Request | None:
        """The first request not yet taken, left in place (None: none, without `block`)."""
        while self.conn.poll() if not block else not self._waiting:
            self._file(self.conn.recv())
        return self._waiting[0] if self._waiting else None

    def pop(self) -> Request:
        """Take the first request (`head` said it is there)."""
        return self._waiting.popleft()

    def cancelled(self, request: int) -> bool:
        """Whether `request` was cancelled (reads the pipe without waiting)."""
        while self.conn.poll():
            self._file(self.conn.recv())
        return request in self._cancels

    def done(self, request: int) -> None:
        """`request` is over: a late cancel for it means nothing."""
        self._cancels.discard(request)

    def _file(self, message: ToWorker) -> None:
        if isinstance(message, Cancel):
            self._cancels.add(message.request)
        else:
            self._waiting.append(message)

    def send(self, message: FromWorker) -> None:
        """Send `message`, after the llama.cpp log lines gathered since the last one."""
        lines = self._gathered()
        if lines:
            self.conn.send(NativeLog(tuple(lines)))
        self.conn.send(message)
