"""The server's open connections, bounded: per peer address and in all, idle ones closed first;
and a listening socket that runs out of descriptors said once per interval, not per attempt.

Guarantees:
- at most `PER_PEER` connections from one address are open at once: one more closes that
  address's connection idle longest, or, when every one of them has a request under way, is
  itself answered 503 and closed — one peer cannot hold the server's connections;
- at most `most_open` connections are open in all: one more closes the connection idle longest,
  from any address, or is itself answered 503 and closed; so idle or half-sent connections,
  however many are reopened, never keep a client with a request out (requests in flight are
  bounded by the guard, which alone answers 503 for them);
- "idle": no request under way — a kept-alive connection between requests, or one whose
  request head has not all come (`listen` closes those at their deadline anyway);
- when the listening socket's accept fails for want of descriptors or memory (EMFILE, ENFILE,
  ENOBUFS, ENOMEM: asyncio retries it each second), every idle connection is closed to give
  descriptors back, and the log says it once per `QUIET_S`, with how many failures came since
  it last did — never a line per attempt; any other loop error goes where it went before.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import time
from typing import Any, Protocol

log = logging.getLogger("server")

PER_PEER = 16  # connections open at once from one address
QUIET_S = 60.0  # the accept loop's lack of descriptors is logged at most once per this
OUT_OF = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
)


class Conn(Protocol):
    """One open connection, as the bounds see it."""

    idle_since: float  # when its last request ended, or it opened

    def idle(self) -> bool:
        """Whether no request is under way on it."""
        ...

    def drop(self, busy: bool) -> None:
        """Close it (`busy`: it is refused for want of room: answered 503 first)."""
        ...


def busy_answer(said: str) -> bytes:
    """The raw 503 a connection refused for want of room is answered before it is closed."""
    error = {"message": said, "type": "server_error", "param": None, "code": "too_many_connections"}
    body = json.dumps({"error": error}).encode()
    return BUSY % (len(body), body)


class Connections:
    """The open connections of one server (see the module guarantees)."""

    def __init__(self, most_open: int, per_peer: int = PER_PEER) -> None:
        self.most_open, self.per_peer = most_open, per_peer
        self.peers: dict[str, list[Conn]] = {}
        self.count = 0
        self.failed = 0  # accept failures since the log last said one
        self.said_at: float | None = None

    def joined(self, conn: Conn, peer: str) -> bool:
        """Count a new connection from `peer`, closing an idle one where a bound says so;
        False when it is refused (the caller drops it)."""
        mine = self.peers.setdefault(peer, [])
        if len(mine) >= self.per_peer and not self._close_idlest(mine):
            return False
        if self.count >= self.most_open and not self._close_idlest(self._every()):
            return False
        mine.append(conn)
        self.count += 1
        return True

    def left(self, conn: Conn, peer: str) -> None:
        """Forget a closed connection (once; a refused one was never counted)."""
        mine = self.peers.get(peer, [])
        if conn in mine:
            mine.remove(conn)
            self.count -= 1
        if not mine:
            self.peers.pop(peer, None)

    def _every(self) -> list[Conn]:
        return [c for conns in self.peers.values() for c in conns]

    def _close_idlest(self, among: list[Conn]) -> bool:
        """Close the connection of `among` idle longest; False when none is idle."""
        idle = [c for c in among if c.idle()]
        if not idle:
            return False
        idlest = min(idle, key=lambda c: c.idle_since)
        self._forget(idlest)
        idlest.drop(busy=False)
        return True

    def _forget(self, conn: Conn) -> None:
        for peer, conns in list(self.peers.items()):
            if conn in conns:
                self.left(conn, peer)

    def out_of_descriptors(self, exc: OSError) -> None:
        """The listening socket could not accept (see the module guarantees)."""
        for conn in [c for c in self._every() if c.idle()]:
            self._forget(conn)
            conn.drop(busy=False)
        self.failed += 1
        now = time.monotonic()
        if self.said_at is not None and now - self.said_at < QUIET_S:
            return
        since = f" ({self.failed} times since it was last said)" if self.failed > 1 else ""
        log.error(
            "the server cannot accept connections: %s%s; idle connections closed, %d open;"
            " said at most once every %.0f s",
            errno.errorcode.get(exc.errno or 0, str(exc.errno)),
            since,
            self.count,
            QUIET_S,
        )
        self.said_at, self.failed = now, 0

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Route `loop`'s accept failures for want of descriptors here (once per loop)."""
        previous = loop.get_exception_handler()
        if getattr(previous, "connections", None) is self:
            return

        def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            exc = context.get("exception")
            if "socket" in context and isinstance(exc, OSError) and exc.errno in OUT_OF:
                self.out_of_descriptors(exc)
            elif previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        handler.connections = self  # type: ignore[attr-defined]
        loop.set_exception_handler(handler)


__all__ = ["OUT_OF", "PER_PEER", "QUIET_S", "Conn", "Connections", "busy_answer"]
