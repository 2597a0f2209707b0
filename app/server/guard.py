"""The guard every request passes before any route (a Starlette middleware).

Guarantees: past `ServeOptions.max_connections` requests in flight at once (idle kept-alive
connections do not count: `listen` bounds those) a request is answered 503 at once, with
`Retry-After`; a request that carries `Host`, `Origin`, `Content-Type`, `Content-Length`,
`Authorization` or `x-api-key` more than once is a 400 — no "last one wins" for the headers
the checks below read; a request from a web page (one with an `Origin` header) is served only
when the origin is the server's own or one the user listed (`--cors-origin`), else 403 — a
page cannot post to it blind; a request without `Origin` (a non-browser client) is not refused
for it; a POST body must say `Content-Type: application/json` (415 otherwise, so no "simple"
cross-site form or `text/plain` post is read); without a token (loopback) the `Host` header
must name this machine or a host the user allowed — a DNS-rebinding page gets 403; when a
token is set (always, off loopback) every request must carry it as a bearer token or
Anthropic's `x-api-key` (401 otherwise; it is never logged), which a rebinding page cannot, so
the LAN names clients use are not refused; a body over the size limit is 413 and not read past
it; each refusal is written in the shape of the API the path belongs to (`Routes.error_body`);
each request has its own image budget (`pictures.request_images`); every request is logged
in one line (method, path, status, duration, and each answer's prompt tokens — evaluated,
reused, restored — and generated ones: `request_log`; control characters escaped) and counted;
a client that goes away before its answer's last byte (mid-stream, or before its body was
read) gets that one INFO line saying so, after how long, and whether its answer had begun —
never a traceback — and its generation stops as it would (the app learns it as before).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse

from app.server import request_log
from app.server.errors import ApiError
from app.server.intake import printable
from app.server.options import LOOPBACK, ServeOptions
from app.server.pictures import request_images
from app.server.routing import ErrorBody

log = logging.getLogger("server")
SINGLE = ("host", "origin", "content-type", "content-length", "authorization", "x-api-key")
_SPELLED = {"x-api-key": "x-api-key"}  # how a refusal names each (else title case)


def duplicated(raw: list[tuple[bytes, bytes]]) -> str | None:
    """The first of the `SINGLE` headers a request carries more than once, if any."""
    seen: set[str] = set()
    for key, _ in raw:
        name = key.decode("latin-1").lower()
        if name in SINGLE:
            if name in seen:
                return name
            seen.add(name)
    return None


def _hostname(header: str) -> str:
    if header.startswith("["):  # [::1]:8080
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _place(url: str, scheme: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin or a `scheme://` + Host header; None if malformed."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if parts.scheme != scheme or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port


def _carries(headers: dict[str, str], token: str) -> bool:
    """Whether a request carries `token`: as a bearer token, or as Anthropic's `x-api-key`."""
    bearer = hmac.compare_digest(headers.get("authorization", ""), f"Bearer {token}")
    return bearer or hmac.compare_digest(headers.get("x-api-key", ""), token)


def origin_allowed(origin: str, host: str, scheme: str, listed: tuple[str, ...]) -> bool:
    """Whether a page at `origin` may call the server at `host`: its own origin or a listed one."""
    if origin in listed or "*" in listed:
        return True
    mine = _place(f"{scheme}://{host}", scheme)
    return mine is not None and _place(origin, scheme) == mine


@dataclass
class Exchange:
    """What the guard sees of one request's answer: the status sent, whether its last byte went,
    and when the client went away before it did."""

    began: float = field(default_factory=time.monotonic)
    status: int = 0
    ended: bool = False  # the answer's last byte was sent
    left: tuple[float, int] | None = None  # (seconds in, status sent by then): the client went

    def sent(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.ended = True

    def received(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.disconnect":
            self.went()

    def went(self) -> None:
        """The client has gone: noted once, and only before the answer's last byte."""
        if not self.ended and self.left is None:
            self.left = (time.monotonic() - self.began, self.status)

    def line(self, method: str, path: str) -> str:
        """The request's log line (control characters escaped), but for its answer's figures."""
        where = f"{printable(method)} {printable(path)}"
        if self.left is None:
            return f"{where} {self.status} {(time.monotonic() - self.began) * 1000:.0f} ms"
        after, status = self.left
        when = f"mid-answer ({status} sent)" if status else "before the answer"
        return f"{where}: the client went away after {after * 1000:.0f} ms, {when}"


class Guard:
    """The checks every request passes (see the module guarantees)."""

    def __init__(
        self, app: Any, options: ServeOptions, stats: Counter[str], error_body: ErrorBody
    ) -> None:
        self.app, self.options, self.stats = app, options, stats
        self.error_body = error_body
        self.hosts = {*LOOPBACK, options.host, *options.allowed_hosts}
        self.in_flight = 0  # requests between their arrival and their answer's end

    async def _refuse(
        self, scope: Any, send: Any, status: int, message: str, code: str, **headers: str
    ) -> None:
        body = self.error_body(scope["path"], ApiError(status, message, code=code))
        answer = JSONResponse(body, status_code=status, headers=headers or None)
        await answer(scope, None, send)  # type: ignore[arg-type]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange()
        self.stats["requests"] += 1  # counted as it arrives
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def sending(message: dict[str, Any]) -> None:
            exchange.sent(message)
            await send(message)

        async def receiving() -> Any:
            message = await receive()
            exchange.received(message)
            return message

        record = request_log.opened()
        self.in_flight += 1
        try:
            with request_images():
                await self._checked(scope, receiving, sending, headers)
        except ClientDisconnect:  # read from a client that had gone: nothing to answer
            exchange.went()
        finally:
            self.in_flight -= 1
            log.info("%s%s", exchange.line(scope["method"], scope["path"]), request_log.said())
            request_log.closed(record)

    async def _busy_or_doubled(self, scope: Any, send: Any) -> bool:
        """Whether the request was refused: too many in flight, or a header given twice."""
        most = self.options.max_connections
        if self.in_flight > most:
            said = f"the server is answering {most} requests at once; try again in a moment"
            await self._refuse(scope, send, 503, said, "server_busy", **{"retry-after": "1"})
            return True
        twice = duplicated(scope["headers"])
        if twice is not None:
            named = _SPELLED.get(twice, twice.title())
            said = f"the request has more than one {named} header; send it once"
            await self._refuse(scope, send, 400, said, "duplicate_header")
            return True
        return False

    async def _checked(self, scope: Any, receive: Any, send: Any, headers: dict[str, str]) -> None:
        if await self._busy_or_doubled(scope, send):
            return
        token = self.options.token
        if token is None and _hostname(headers.get("host", "")) not in self.hosts:
            await self._refuse(
                scope,
                send,
                403,
                "this server answers only to its own address (the Host header names another)",
                "host_not_allowed",
            )
            return
        if token is not None and not _carries(headers, token):  # Bearer, or Anthropic's header
            await self._refuse(
                scope,
                send,
                401,
                "a token is required (Authorization: Bearer TOKEN, or x-api-key: TOKEN)",
                "invalid_api_key",
            )
            return
        origin, host = headers.get("origin"), headers.get("host", "")
        scheme, listed = scope.get("scheme", "http"), self.options.cors_origins
        if origin is not None and not origin_allowed(origin, host, scheme, listed):
            await self._refuse(
                scope,
                send,
                403,
                "this server answers web pages of its own origin only (or one set with"
                " --cors-origin)",
                "origin_not_allowed",
            )
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.options.max_body:
            await self._refuse(
                scope,
                send,
                413,
                f"the body is over {self.options.max_body} bytes",
                "request_too_large",
            )
            return
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if scope["method"] == "POST" and kind != "application/json":
            await self._refuse(
                scope,
                send,
                415,
                "a request body must be JSON, sent with Content-Type: application/json",
                "unsupported_media_type",
            )
            return
        await self.app(scope, self._limited(receive), send)

    def _limited(self, receive: Any) -> Callable[[], Awaitable[Any]]:
        seen = [0]

        async def limited() -> Any:
            message = await receive()
            seen[0] += len(message.get("body", b""))
            if seen[0] > self.options.max_body:
                raise ApiError(
                    413, f"the body is over {self.options.max_body} bytes", code="request_too_large"
                )
            return message

        return limited


__all__ = ["SINGLE", "Exchange", "Guard", "duplicated", "origin_allowed"]
