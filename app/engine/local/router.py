"""The app's end of the worker pipe: requests out with fresh ids, replies routed to their caller.

Guarantees: every request gets a new id; `next(request)` returns only that request's replies,
in order, and files any other request's replies in that request's mailbox (the caller that
reads the pipe routes for everyone, one reader at a time, and a caller whose reply another
caller filed is woken at once, not after that reader's poll); a send never waits for a
reader's poll (its own lock), so a `Cancel` goes out at once whoever is waiting;
llama.cpp's log lines go to `on_log` and never reach a caller; a reply for a request nobody
waits on any more is dropped once the request is over; a dead worker is a `WorkerError` with
the death in words.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable

from app.engine.local.process import WorkerProcess
from app.engine.protocol import (
    ENDS_REQUEST,
    FromWorker,
    NativeLog,
    RequestState,
    ToWorker,
    check_request,
)
from app.errors import WorkerError


class Router:
    """Routes one worker process's replies by request id."""

    def __init__(
        self, process: WorkerProcess, on_log: Callable[[NativeLog], None] | None = None
    ) -> None:
        self.process = process
        self._on_log = on_log
        self._ids = itertools.count(1)
        self._lock = threading.Condition()  # the tables: ids, mailboxes, states; mail filed
        self._reader = False  # whether a caller is reading the pipe (under `_lock`)
        self._sending = threading.Lock()  # one writer at a time, never behind a reader
        self._mail: dict[int, collections.deque[FromWorker]] = {}
        self.states: dict[int, RequestState] = {}  # the requests under way, each with its state

    def new_id(self) -> int:
        """A fresh request id, registered so that its replies are kept for it."""
        with self._lock:
            request = next(self._ids)
            self._mail[request] = collections.deque()
            self.states[request] = RequestState.SENT
            return request

    def send(self, message: ToWorker) -> None:
        """Send `message`; `WorkerError` when the worker is gone."""
        try:
            with self._sending:
                self.process.conn.send(message)
        except (OSError, EOFError) as exc:
            raise WorkerError(self.process.death()) from exc

    def move(self, request: int, state: RequestState) -> None:
        """Move `request` to `state` (an illegal move is a bug and raises)."""
        check_request(self.states[request], state)
        self.states[request] = state

    def next(self, request: int, timeout: float) -> FromWorker | None:
        """`request`'s next reply, None after `timeout` seconds without one."""
        mailbox = self._mail[request]
        if not mailbox and self._take_turn(mailbox, time.monotonic() + timeout):
            try:
                self._read(timeout)
            finally:
                with self._lock:
                    self._reader = False
                    self._lock.notify_all()  # another caller may read now
        if not mailbox:
            return None
        reply = mailbox.popleft()
        if isinstance(reply, ENDS_REQUEST):
            self.finish(request, RequestState.DONE)
        elif self.states[request] is RequestState.SENT:
            self.move(request, RequestState.ANSWERING)
        return reply

    def finish(self, request: int, state: RequestState) -> None:
        """`request` is over: its state is final and later replies for it are dropped."""
        with self._lock:
            if request in self.states:
                if self.states[request] not in (RequestState.DONE, RequestState.FAILED):
                    check_request(self.states[request], state)
                del self.states[request]
            self._mail.pop(request, None)

    def _take_turn(self, mailbox: collections.deque[FromWorker], deadline: float) -> bool:
        """Wait until `mailbox` has mail (False) or no one reads the pipe, and become its reader
        (True); False at `deadline`."""
        with self._lock:
            while not mailbox and self._reader:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            if mailbox:
                return False
            self._reader = True
            return True

    def _read(self, timeout: float) -> None:
        """Read what the pipe holds within `timeout` into the mailboxes (this caller is the
        reader). What a worker sent before it died is delivered first: its death is raised by
        the read that finds nothing else."""
        conn = self.process.conn
        filed = False
        try:
            if not conn.poll(timeout):
                if not self.process.alive():
                    raise WorkerError(self.process.death())
                return
            while True:
                self._file(conn.recv())
                filed = True
                if not conn.poll(0):
                    return
        except (EOFError, OSError) as exc:
            if filed:
                return
            raise WorkerError(self.process.death()) from exc

    def _file(self, message: NativeLog | FromWorker) -> None:
        if isinstance(message, NativeLog):
            if self._on_log is not None:
                self._on_log(message)
            return
        with self._lock:
            mailbox = self._mail.get(message.request)
            if mailbox is not None:  # else a reply to a request that is over: nobody waits
                mailbox.append(message)
                self._lock.notify_all()
