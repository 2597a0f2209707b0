"""The server's HTTP side: routes, and the guard every request passes (Starlette + uvicorn).

Guarantees: a request from a web page (one with an `Origin` header) is served only when the
origin is the server's own or one the user listed (`--cors-origin`), else 403 — a page cannot
post to it blind; a request without `Origin` (a non-browser client) is not refused for it; a
POST body must say `Content-Type: application/json` (415 otherwise, so no "simple" cross-site
form or `text/plain` post is read); without a token (loopback) the `Host` header must name
this machine or a host the user allowed — a DNS-rebinding page gets 403; when a token is set
(always, off loopback) every request must carry it as a bearer token or Anthropic's
`x-api-key` (401 otherwise; it is never logged), which a rebinding page cannot, so the LAN
names clients use are not refused;
a body over the size limit is 413 and not read past it; bad JSON is 400 `invalid_json`; CORS
headers are sent only to origins the user listed; a body must come within `body_timeout_s`
(408) and pass the boundary checks of `intake` (depth, strict JSON, no lone surrogates);
every request is logged (method, path, status, tokens, duration; control characters escaped)
and counted; nothing a client sends
reaches the window as an exception — an unexpected failure is a 500 in OpenAI's shape, logged
with its traceback; a path no route has is a 404 and a method its route does not take a 405,
both error objects too (`fallback`). `GET /health` is `{"status": "ok"}` — the server listens
only once its model is loaded — and the OpenAI paths answer without `/v1` as well; `/v1/models`
says whether the model sees images as llama-server's router does (`architecture`:
`input_modalities` with `image`).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.server.chat_api import ChatApi
from app.server.choices import answer as answer_chat
from app.server.completions_api import CompletionsApi
from app.server.embeddings_api import EmbeddingsApi, model_entry
from app.server.fallback import exception_handlers
from app.server.intake import parsed, printable, read_within
from app.server.messages_api import MessagesApi, anthropic_shaped, guard_body
from app.server.responses_api import ResponsesApi
from app.server.served import ServedModel
from app.server.wire import ApiError, ReasoningField

log = logging.getLogger("server")
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None  # required as a bearer token when set
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # names besides this machine's the Host may carry
    max_body: int = 8 * 1024 * 1024
    max_tokens: int = 4096  # a request may not ask for more
    reasoning_field: ReasoningField = "reasoning_content"
    thinking_budget: int | None = None  # gpt-oss under a constraint: tokens per reasoning message
    head_timeout_s: float = 10.0  # a connection's request line and headers must come by then
    body_timeout_s: float = 30.0  # a request's body must come by then (408)
    idle_timeout_s: int = 5  # a kept-alive connection with no new request is closed
    max_connections: int = 64  # open at once; past it a request is answered 503


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


class Guard:
    """The checks every request passes (see the module guarantees)."""

    def __init__(self, app: Any, options: ServeOptions, stats: Counter[str]) -> None:
        self.app, self.options, self.stats = app, options, stats
        self.hosts = {*LOOPBACK, options.host, *options.allowed_hosts}

    @staticmethod
    async def _refuse(scope: Any, send: Any, status: int, message: str, code: str) -> None:
        body = guard_body(scope["path"], ApiError(status, message, code=code))
        await JSONResponse(body, status_code=status)(scope, None, send)  # type: ignore[arg-type]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began, status = time.monotonic(), [0]
        self.stats["requests"] += 1  # counted as it arrives
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._checked(scope, receive, sending, headers)
        finally:
            log.info(
                "%s %s %s %.0f ms%s",
                printable(scope["method"]),
                printable(scope["path"]),
                status[0],
                (time.monotonic() - began) * 1000,
                scope.get("harmony_desk_tokens", ""),
            )

    async def _checked(self, scope: Any, receive: Any, send: Any, headers: dict[str, str]) -> None:
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


def _answering(
    handler: Callable[[Request], Awaitable[Response]], body_timeout_s: float
) -> Callable[..., Any]:
    async def endpoint(request: Request) -> Response:
        try:
            if request.method == "POST":
                request.state.json = parsed(await read_within(request.body(), body_timeout_s))
            return await handler(request)
        except ApiError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        except Exception as exc:
            log.exception("the server failed on %s", printable(request.url.path))
            said = f"internal error: {type(exc).__name__}: {exc}"
            body = ApiError(
                500, said.encode("utf-8", "backslashreplace").decode(), type="server_error"
            ).body()
            return JSONResponse(body, status_code=500)

    return endpoint


def _json(request: Request) -> Any:
    return request.state.json  # read and checked by `_answering`


class _Handlers:
    """The endpoints of one served model (each answers a checked request body)."""

    def __init__(self, served: ServedModel, options: ServeOptions) -> None:
        self.served = served
        self.chat = ChatApi(
            served, options.reasoning_field, options.max_tokens, options.thinking_budget
        )
        self.completions = CompletionsApi(served, options.max_tokens)
        self.responses = ResponsesApi(self.chat)

    async def models(self, _request: Request) -> Response:
        s = self.served
        model: dict[str, Any] = {
            "id": s.name,
            "object": "model",
            "created": s.created,
            "owned_by": "harmony-desk",
        }
        inputs = ["text", "image"] if s.sees_images else ["text"]  # as llama-server's router says
        model["architecture"] = {"input_modalities": inputs, "output_modalities": ["text"]}
        embedding = [model_entry(s.embedder.facts)] if s.embedder is not None else []
        return JSONResponse({"object": "list", "data": [model, *embedding]})

    async def chat_route(self, request: Request) -> Response:
        return await answer_chat(self.chat, _json(request), request.is_disconnected)

    async def completions_route(self, request: Request) -> Response:
        return await self.completions(_json(request), request.is_disconnected)

    async def responses_route(self, request: Request) -> Response:
        return await self.responses(_json(request), request.is_disconnected)

    async def embeddings(self, request: Request) -> Response:
        if self.served.embedder is not None:
            api = EmbeddingsApi(self.served.embedder, self.served.name)
            return await api(_json(request))
        raise ApiError(
            400,
            f"{self.served.name} is a chat model: it has no embeddings here; load an"
            " embedding model to use /v1/embeddings",
            param="model",
            code="model_cannot_embed",
        )

    async def invocations(self, request: Request) -> Response:
        """Databricks' serving-endpoint form: the body says which API it is."""
        body = _json(request)
        if isinstance(body, dict) and "messages" in body:
            return await answer_chat(self.chat, body, request.is_disconnected)
        if isinstance(body, dict) and "prompt" in body:
            return await self.completions(body, request.is_disconnected)
        if isinstance(body, dict) and "input" in body:
            return await self.embeddings(request)
        raise ApiError(
            400,
            "an invocation has `messages` (chat), `prompt` (completions) or `input` (embeddings)",
        )

    async def health(self, _request: Request) -> Response:
        """llama-server's health check: the server answers once its model is loaded."""
        return JSONResponse({"status": "ok"})

    async def status(self, _request: Request) -> Response:
        use = self.served.use() if self.served.use is not None else None
        said = {"model": self.served.name, **self.served.stats}
        return JSONResponse({**said, "sequences": use} if use is not None else said)

    def posts(self) -> dict[str, Callable[[Request], Awaitable[Response]]]:
        """The POST routes, by path."""
        return {
            "/v1/chat/completions": self.chat_route,
            "/v1/completions": self.completions_route,
            "/v1/responses": self.responses_route,
            # llama-server's unprefixed paths (clients configured without `/v1`)
            "/chat/completions": self.chat_route,
            "/completions": self.completions_route,
            "/responses": self.responses_route,
            "/v1/embeddings": self.embeddings,
            "/embeddings": self.embeddings,  # llama-server's unprefixed path
            "/serving-endpoints/{name}/invocations": self.invocations,
            # Databricks through the openai SDK (base URL `.../serving-endpoints`)
            "/serving-endpoints/chat/completions": self.chat_route,
            "/serving-endpoints/completions": self.completions_route,
            "/serving-endpoints/embeddings": self.embeddings,
        }


def make_app(served: ServedModel, options: ServeOptions) -> Starlette:
    """The server for `served` (see the module guarantees)."""
    handlers = _Handlers(served, options)
    wait = options.body_timeout_s
    routes = [
        Route("/v1/models", _answering(handlers.models, wait), methods=["GET"]),
        Route("/models", _answering(handlers.models, wait), methods=["GET"]),  # llama-server's
        Route("/health", _answering(handlers.health, wait), methods=["GET"]),
        Route("/harmony-desk/status", _answering(handlers.status, wait), methods=["GET"]),
        *(
            Route(path, _answering(post, wait), methods=["POST"])
            for path, post in handlers.posts().items()
        ),
        *(  # Anthropic's Messages API: /v1/messages, /v1/messages/count_tokens, unprefixed too
            Route(path, anthropic_shaped(_answering(post, wait)), methods=["POST"])
            for path, post in MessagesApi(handlers.chat).posts().items()
        ),
    ]
    middleware = [Middleware(Guard, options=options, stats=served.stats)]
    if options.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(options.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "x-api-key", "anthropic-version"],
            )
        )
    return Starlette(routes=routes, middleware=middleware, exception_handlers=exception_handlers())


__all__ = ["ServeOptions", "make_app"]
