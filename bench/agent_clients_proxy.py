"""A recording HTTP proxy between an agent client and a server, for `bench/agent_clients.py`.

Guarantees: every request is forwarded to the upstream server, on a connection of its own, with
its method, path, query and body byte for byte (its headers too, less the hop-by-hop ones and
`host`), and the response goes back with its status, headers (less the hop-by-hop ones) and body
byte for byte, streamed as it comes (a server-sent event stream reaches the client event by
event). Every exchange is recorded (`Exchange`): the request's method, path, headers and body,
the response's status, and, once its body has ended, what the body said about prompt tokens
(`usage`, merged over the stream's events in order; llama-server's `timings`) and its error, if
any: an HTTP status of 400 or over, an `error` event in a stream, or an upstream that could not
be reached (answered 502 to the client). Nothing is changed on the way; nothing is kept but the
records.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import uvicorn
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bench.llama_server import free_port

HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
ERROR_TEXT = 400  # characters of an error body kept
LAST_EVENTS = (  # an answer's last event, in each API's stream
    "data: [DONE]",
    "event: response.completed",
    "event: response.incomplete",
    "event: message_stop",
)


@dataclass
class Exchange:
    """One request the client sent and what came back."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    started: float = field(default_factory=time.monotonic)
    status: int = 0  # 0: no answer yet
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    ended: bool = False  # the response body was read to its end
    finished: float = 0.0  # when the response body ended (monotonic s)
    logged: tuple[int, int] | None = None  # (in all, evaluated) from the server's own log
    answer: str = ""  # the response body as text, once it has ended (kept for `--keep`)

    @property
    def api(self) -> str:
        """`messages`, `responses` or `chat` (the path's API), else the path."""
        for name in ("messages", "responses", "chat/completions"):
            if self.path.rstrip("/").endswith(name):
                return name.split("/")[0]
        return self.path

    @property
    def whole(self) -> bool:
        """The answer was read to its end, or to its API's last event (a client may hang up
        once it has that event, before the server closes the stream)."""
        return self.ended or any(mark in self.answer for mark in LAST_EVENTS)

    def output_tokens(self) -> int | None:
        """The answer's tokens, as its usage says them (None: it says none)."""
        u = self.usage
        said = u.get("completion_tokens") if self.api == "chat" else u.get("output_tokens")
        return int(said) if said is not None else None

    def json_body(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def prompt(self) -> tuple[int, int] | None:
        """(prompt tokens in all, of them evaluated, not read from the cache), from the usage
        in the API's own terms (see bench/agent_clients.py), else llama-server's `timings`
        (`prompt_n` evaluated, `cache_n` read from the cache), else `logged`; or None."""
        return self._usage() or self._timings() or self.logged

    def _timings(self) -> tuple[int, int] | None:
        t = self.timings
        if "prompt_n" in t and "cache_n" in t:
            return int(t["prompt_n"]) + int(t["cache_n"]), int(t["prompt_n"])
        return None

    def _usage(self) -> tuple[int, int] | None:
        u = self.usage
        if self.api == "chat" and "prompt_tokens" in u:
            cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            return int(u["prompt_tokens"]), int(u["prompt_tokens"]) - int(cached)
        if self.api == "responses" and "input_tokens" in u:
            cached = (u.get("input_tokens_details") or {}).get("cached_tokens") or 0
            return int(u["input_tokens"]), int(u["input_tokens"]) - int(cached)
        if self.api == "messages" and "input_tokens" in u:
            fresh = int(u["input_tokens"]) + int(u.get("cache_creation_input_tokens") or 0)
            return fresh + int(u.get("cache_read_input_tokens") or 0), fresh
        return None


@dataclass
class Recorder:
    """The exchanges one proxy saw, in the order they were sent."""

    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, exchange: Exchange) -> None:
        with self.lock:
            self.exchanges.append(exchange)

    def since(self, start: int) -> list[Exchange]:
        with self.lock:
            return list(self.exchanges[start:])

    def __len__(self) -> int:
        with self.lock:
            return len(self.exchanges)


def read_body(exchange: Exchange, data: bytes, encoding: str) -> None:
    """What a whole response body says: its usage, timings and error, into `exchange`."""
    if encoding in ("gzip", "deflate"):
        try:
            data = zlib.decompress(data, zlib.MAX_WBITS | 32)
        except zlib.error:
            return
    text = data.decode("utf-8", errors="replace")
    exchange.answer = text
    chunks = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    for chunk in chunks or [text]:
        try:
            _take(exchange, json.loads(chunk))
        except ValueError:  # `[DONE]`, or a body that is not JSON
            continue
    if exchange.status >= 400 and exchange.error is None:
        exchange.error = f"HTTP {exchange.status}: {text[:ERROR_TEXT]}"


def _take(exchange: Exchange, event: Any) -> None:
    if not isinstance(event, dict):
        return
    for holder in (event, event.get("message"), event.get("response")):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            exchange.usage |= {k: v for k, v in holder["usage"].items() if v is not None}
    if isinstance(event.get("timings"), dict):
        exchange.timings |= event["timings"]
    failed = event.get("type") in ("error", "response.failed") or "error" in event
    if failed and exchange.status < 400 and exchange.error is None and event.get("error"):
        said = json.dumps(event, ensure_ascii=False)[:ERROR_TEXT]
        exchange.error = f"HTTP {exchange.status}, then an error event: {said}"


class Proxy:
    """An ASGI app forwarding to `upstream` (`http://host:port`), recording into `recorder`."""

    def __init__(self, upstream: str, recorder: Recorder) -> None:
        self.upstream = upstream
        self.recorder = recorder
        # a connection per request: a pooled one the server closed while idle (ours after 5 s,
        # httpx's own expiry) fails the next request sent on it, and would be a 502 of the proxy's
        fresh = httpx.Limits(max_keepalive_connections=0)
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None), trust_env=False, limits=fresh)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        response = await self.forward(Request(scope, receive))
        await response(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        """Start-up and shut-down: the upstream connections are closed on the way out."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        exchange = Exchange(request.method, request.url.path, headers, body)
        self.recorder.add(exchange)
        url = self.upstream + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        try:
            upstream = await self.client.send(
                self.client.build_request(request.method, url, headers=headers, content=body),
                stream=True,
            )
        except httpx.HTTPError as exc:
            exchange.status, exchange.ended = 502, True
            exchange.error = f"the server could not be reached: {type(exc).__name__}: {exc}"
            return Response(exchange.error, status_code=502)
        exchange.status = upstream.status_code
        kept = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP}
        return StreamingResponse(
            self._relay(exchange, upstream), status_code=upstream.status_code, headers=kept
        )

    async def _relay(self, exchange: Exchange, upstream: httpx.Response) -> AsyncIterator[bytes]:
        seen = bytearray()
        try:
            async for piece in upstream.aiter_raw():
                seen += piece
                yield piece
            exchange.ended = True
        except httpx.HTTPError as exc:
            exchange.error = f"the response broke off: {type(exc).__name__}: {exc}"
        finally:
            exchange.finished = time.monotonic()
            await upstream.aclose()
            read_body(exchange, bytes(seen), upstream.headers.get("content-encoding", ""))


@contextmanager
def proxying(upstream: str, recorder: Recorder) -> Iterator[str]:
    """A proxy to `upstream` on a free loopback port, running in a thread: its base URL."""
    port = free_port()
    config = uvicorn.Config(
        Proxy(upstream, recorder),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_keep_alive=60,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="agent-proxy", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


__all__ = ["Exchange", "Proxy", "Recorder", "proxying", "read_body"]
