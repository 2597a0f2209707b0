"""The loopback redirect of an OAuth sign-in (RFC 8252): a tiny HTTP server on 127.0.0.1.

Guarantees: it listens on 127.0.0.1 only, on the port the client registered or, when that is
taken, on a free one; it takes one request to `/callback` only: the first that carries the
state of the authorization URL the browser was sent to (`expect`), with its code or the
authorization server's error, answered with a page that says the tab can be closed; a
callback without that state (none, another, or before any was sent) is answered 400 with a
page that claims nothing, and the receiver goes on waiting for the real one — a forged first
callback can neither end the sign-in nor be thanked for it; any other path is 404; a request
that does not arrive whole within `REQUEST_S` is dropped; `code` waits for the callback no
longer than its deadline. `SignInError`, the error of a sign-in that failed or is needed, is
drawn here, below the other sign-in modules.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any
from urllib.parse import parse_qs, urlsplit

from app.errors import ErrorCode, HarmonyDeskError

REQUEST_S = 10.0  # for the browser's request to arrive whole
CALLBACK = "/callback"
PAGE = (
    "<!doctype html><meta charset=utf-8><title>Harmony Desk</title>"
    "<p style='font:16px sans-serif;margin:3em'>{}</p>"
)


class SignInError(HarmonyDeskError):
    """A sign-in to an MCP server that failed, or that a connection needs first."""

    code = ErrorCode.TOOL_ERROR


class Receiver:
    """The loopback redirect: a tiny HTTP server on 127.0.0.1 that takes the first request to
    `/callback` carrying the expected state (its code, or the authorization server's error)
    and answers a page that says the tab can be closed (see the module guarantees)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = 0
        self._got: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._server: asyncio.Server | None = None
        self._state: bytes | None = None  # the state the browser was sent with

    def expect(self, authorization_url: str) -> None:
        """The browser is sent to `authorization_url`: only a callback with its state counts."""
        states = parse_qs(urlsplit(authorization_url).query).get("state") or [""]
        self._state = states[0].encode() or None

    async def start(self, port: int = 0) -> None:
        """Listen on `port` (the registered one), or on a free one where it is taken."""
        try:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        except OSError:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_S)
            target = head.split(b" ", 2)[1].decode("latin-1")
            status, text = self._took(urlsplit(target))
            body = PAGE.format(text).encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (
            OSError,
            IndexError,
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass  # not a browser's request: nothing is taken from it
        finally:
            writer.close()

    def _took(self, url: Any) -> tuple[str, str]:
        if url.path != CALLBACK:
            return "404 Not Found", "Nothing here."
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        state = query.get("state", "").encode()
        if self._state is None or not hmac.compare_digest(state, self._state):
            return "400 Bad Request", "This address is not a sign-in in progress."
        if self._got.done():
            return "200 OK", "This sign-in was already received. You can close this tab."
        if "error" in query:
            error = query.get("error_description") or query["error"]
            self._got.set_exception(
                SignInError(
                    f"Signing in to {self.name} was refused by its authorization server ({error})."
                )
            )
            return "200 OK", f"The sign-in to {self.name} was refused. You can close this tab."
        from mcp.client.auth import AuthorizationCodeResult

        self._got.set_result(
            AuthorizationCodeResult(
                code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")
            )
        )
        return "200 OK", f"Harmony Desk has your sign-in to {self.name}. You can close this tab."

    async def code(self, timeout: float) -> Any:
        """The authorization code, once the browser is redirected back (SignInError after
        `timeout` seconds without it)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._got), timeout)
        except TimeoutError:
            raise SignInError(
                f"Signing in to {self.name} did not finish within {timeout:g} s: nothing came"
                " back from the browser."
            ) from None

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


__all__ = ["CALLBACK", "REQUEST_S", "Receiver", "SignInError"]
