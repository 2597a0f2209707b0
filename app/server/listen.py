"""How the server listens: the one uvicorn configuration `serve` and the window both use.

Guarantees: a connection must send a whole request head within `ServeOptions.head_timeout_s`
of opening (or of its previous answer), or it is closed — an idle or slow-header connection
cannot hold a file descriptor for long; a kept-alive connection idle for `idle_timeout_s` is
closed; a request head over `MAX_HEAD` bytes is refused by h11 (400); open connections are
bounded by `connections.Connections` — `PER_PEER` from one address and `MOST_OPEN_FACTOR` ×
`max_connections` in all, the idlest closed to make room, so idle sockets never push a request
out — and the listening socket's running out of descriptors is logged once per interval;
requests in flight are bounded by the guard (past `max_connections`, 503 at once), never
uvicorn's count of open connections; the body's own deadline is the app's
(`ServeOptions.body_timeout_s`, a 408).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import h11
from uvicorn import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.server.app import make_app
from app.server.connections import Connections, busy_answer
from app.server.fleet import Fleet
from app.server.options import ServeOptions
from app.server.served import ServedModel

MAX_HEAD = 16 * 1024  # bytes of request line and headers
MOST_OPEN_FACTOR = 4  # open connections in all, per request that may be in flight


class _Bounded(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late, and counted
    by the server's `Connections`."""

    head_timeout_s = 10.0
    bounds: Connections
    _deadline: asyncio.TimerHandle | None = None
    idle_since = 0.0
    _peer = ""
    _counted = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit_concurrency = None  # requests in flight are the guard's to count

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.head_timeout_s, self._late)

    def _late(self) -> None:
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()  # no request under way: nothing to answer

    def idle(self) -> bool:
        """Whether no request is under way on this connection."""
        return self.conn.their_state is h11.IDLE and (
            self.cycle is None or self.cycle.response_complete
        )

    def drop(self, busy: bool) -> None:
        """Close this connection (`busy`: refused for want of room, answered 503 first)."""
        if self.transport.is_closing():
            return
        if busy:
            said = "too many connections are open (from your address, or in all); try again"
            self.transport.write(busy_answer(said))
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.idle_since = time.monotonic()
        self._peer = self.client[0] if self.client else ""
        self._counted = self.bounds.joined(self, self._peer)
        if not self._counted:
            self.drop(busy=True)
            return
        self._arm()

    def on_response_complete(self) -> None:
        self.idle_since = time.monotonic()
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        if self._counted:
            self.bounds.left(self, self._peer)
        super().connection_lost(exc)


class _Config(Config):
    """uvicorn's configuration, routing the serving loop's accept failures to `bounds`."""

    bounds: Connections

    def load(self) -> None:
        super().load()
        with contextlib.suppress(RuntimeError):  # loaded outside the serving loop: not yet
            self.bounds.watch(asyncio.get_running_loop())


def server_config(served: ServedModel | Fleet, options: ServeOptions, **extra: Any) -> Config:
    """The uvicorn configuration serving `served`: one model, or several (see the module
    guarantees)."""
    connections = Connections(MOST_OPEN_FACTOR * options.max_connections)
    protocol = type(
        "Bounded",
        (_Bounded,),
        {"head_timeout_s": options.head_timeout_s, "bounds": connections},
    )
    config = _Config(
        make_app(served, options),
        host=options.host,
        port=options.port,
        http=protocol,
        timeout_keep_alive=options.idle_timeout_s,
        limit_concurrency=options.max_connections,  # said; the guard holds it (see above)
        h11_max_incomplete_event_size=MAX_HEAD,
        log_level="warning",
        **extra,
    )
    config.bounds = connections
    return config


__all__ = ["MAX_HEAD", "MOST_OPEN_FACTOR", "server_config"]
