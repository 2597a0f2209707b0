"""How the server listens: the one uvicorn configuration `serve` and the window both use.

Guarantees: a connection must send a whole request head within `ServeOptions.head_timeout_s`
of opening (or of its previous answer), or it is closed — an idle or slow-header connection
cannot hold a file descriptor for long; a kept-alive connection idle for
`idle_timeout_s` is closed; a request head over `MAX_HEAD` bytes is refused by h11 (400);
past `max_connections` open connections a new request is answered 503 at once; the body's
own deadline is the app's (`ServeOptions.body_timeout_s`, a 408).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.server.app import make_app
from app.server.fleet import Fleet
from app.server.options import ServeOptions
from app.server.served import ServedModel

MAX_HEAD = 16 * 1024  # bytes of request line and headers


class _HeadDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late."""

    head_timeout_s = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.head_timeout_s, self._late)

    def _late(self) -> None:
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()  # no request under way: nothing to answer

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)


def server_config(served: ServedModel | Fleet, options: ServeOptions, **extra: Any) -> Config:
    """The uvicorn configuration serving `served`: one model, or several (see the module
    guarantees)."""
    protocol = type("HeadDeadline", (_HeadDeadline,), {"head_timeout_s": options.head_timeout_s})
    return Config(
        make_app(served, options),
        host=options.host,
        port=options.port,
        http=protocol,
        timeout_keep_alive=options.idle_timeout_s,
        limit_concurrency=options.max_connections,
        h11_max_incomplete_event_size=MAX_HEAD,
        log_level="warning",
        **extra,
    )


__all__ = ["MAX_HEAD", "server_config"]
