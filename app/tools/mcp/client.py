"""A connection to one MCP server through the official `mcp` SDK — local over stdio, remote
over Streamable HTTP or legacy SSE — behind a blocking interface any thread may call.

Guarantees: the SDK's session runs on a private asyncio loop in its own thread, so a slow or
hung server never blocks a caller past its deadline; every request has an overall deadline
counted from the call, which progress notifications never extend (a call may also have an
`idle` limit counted from the server's last progress, which never runs while the host answers
the server's own request: sampling, elicitation); E-TOOL-TIMEOUT when either passes; a
call that times out or is cancelled through its `cancel` event is abandoned with the
protocol's `notifications/cancelled`; a local server runs under the guard with the environment
of `app/tools/mcp/env.py`; a remote server gets its headers with their secrets read from the
keyring at connect (never from a file), and an OAuth server its stored sign-in, which never
opens a browser (`oauth.py`: a 401 on any request says "sign in to NAME first", a 403 asking
for a wider scope says so and keeps the sign-in, either as the `McpError`'s `sign_in`); a
server that cannot start says so in one sentence
that names it once and says what happened in words ("The MCP server “git” could not start: the
command “uvx” was not found.", "…: it exited with code 1 before answering.",
`app/tools/mcp/words.py`) — no exception class, no `PATH` — with the technical facts (first,
for a Python that lacked a module, which Python ran and how to fix it) and a
short, redacted excerpt of what it wrote to stderr (kept bounded by `app/tools/mcp/stderr.py`)
as the error's `details`; a request that fails says so the same way; every error's text and
details are redacted (`app.domain.redact`); `alive` is false once the transport
has gone; `close` ends the session and the server's processes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from app.domain.redact import redact
from app.errors import ErrorCode, HarmonyDeskError
from app.secrets import Secrets
from app.tools.mcp.config import McpServer, secret_name
from app.tools.mcp.env import environment, guarded
from app.tools.mcp.hooks import NO_HOOKS, McpHooks, sdk_callbacks
from app.tools.mcp.interpreter import missing_module, resolve
from app.tools.mcp.stderr import StderrTail
from app.tools.mcp.words import ended, facts, said, why

T = TypeVar("T")
START_S = 30.0
DETAILS_CHARS = 1000  # of a server's stderr, in an error's details
POLL_S = 0.05
PING_S = 3.0


class McpError(HarmonyDeskError):
    """A server that cannot start, answer in time, or that failed a request; `sign_in` is
    the sign-in that stopped it (a `SignInError`: needed, wider, stopped), None otherwise."""

    def __init__(
        self,
        message: str,
        code: ErrorCode = ErrorCode.TOOL_ERROR,
        details: str = "",
        sign_in: HarmonyDeskError | None = None,
    ) -> None:
        message = redact(message)  # a server's words, an exception's text: never a secret
        super().__init__(message, redact(details))
        self.code, self.sign_in = code, sign_in


class McpConnection:
    """One started server (see the module guarantees)."""

    def __init__(
        self,
        name: str,
        server: McpServer,
        secrets: Secrets | None = None,
        hooks: McpHooks = NO_HOOKS,
    ) -> None:
        self.name, self.server, self.hooks = name, server, hooks
        self._secrets = secrets
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"mcp-{name}", daemon=True
        )
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: Any = None
        self._gone = False
        self._refused = ""
        self._oauth: Any = None  # an OAuth server's httpx auth (`oauth.connect_auth`)
        self._answering, self._answered = 0, 0.0  # the server's requests the host is answering
        self._stderr = StderrTail()
        self._program: str | None = None  # what a local server's command ran
        self._thread.start()

    def _wait(
        self,
        work: Coroutine[Any, Any, T],
        timeout: float,
        cancel: threading.Event | None = None,
        progressed: Callable[[], float] | None = None,
        idle: float | None = None,
    ) -> T:
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        began = time.monotonic()
        while True:
            try:
                return future.result(POLL_S)
            except cf.TimeoutError:
                pass
            except cf.CancelledError:
                said = f"The request to the MCP server “{self.name}” was cancelled."
                raise McpError(said) from None
            except McpError:
                raise
            except Exception as exc:  # the SDK and the transport raise many kinds
                stopped = (
                    self._oauth.follow.take() if self._oauth else None
                )  # before the ping, which may sign in too
                self._check_transport()
                raise self._failed(exc, stopped) from None
            if cancel is not None and cancel.is_set():
                future.cancel()  # the SDK sends notifications/cancelled to the server
                raise McpError("the user cancelled the call", ErrorCode.TOOL_CANCELLED)
            now = time.monotonic()
            last = max(began, progressed() if progressed is not None else 0.0, self._answered)
            if self._answering:  # the server waits on the host (a person, the model): not idle
                last = now
            if now - began > timeout or (idle is not None and now - last > idle):
                future.cancel()
                took = timeout if now - began > timeout else idle
                raise McpError(
                    f"The MCP server “{self.name}” did not answer within {took:g} s.",
                    ErrorCode.TOOL_TIMEOUT,
                )

    def _check_transport(self) -> None:
        """After a failed request: mark the connection gone unless the server answers a ping."""
        if self._session is None or self._gone:
            return
        future = asyncio.run_coroutine_threadsafe(self._session.send_ping(), self._loop)
        try:
            future.result(PING_S)
        except BaseException:
            future.cancel()
            self._gone = True

    def _failed(self, exc: BaseException, stopped: HarmonyDeskError | None = None) -> McpError:
        """A request that failed, in a sentence; what the server wrote, in the details."""
        if stopped is not None:  # a sign-in is needed, or a wider one: said as it is
            text = f"The MCP server “{self.name}” failed: {stopped.message}."
            return McpError(text, details=stopped.details, sign_in=stopped)
        status = self._stderr.status(wait=0.2) if self.server.transport == "stdio" else None
        if status is not None:
            clause = ended(status).removesuffix(" before answering")
        else:
            clause = self._why(exc)
        details = facts(said(exc), self._stderr_details())
        return McpError(f"The MCP server “{self.name}” failed: {clause}.", details=details)

    def _why(self, exc: BaseException) -> str:
        if self._refused.startswith("HTTP 401") and self.server.oauth:  # revoked while open
            from app.tools.mcp.oauth import needs_sign_in

            return needs_sign_in(self.name, expired=True).message
        if self._refused.startswith("HTTP 401"):  # a server the configuration says is open
            return f"it asks for a sign-in ({self._refused}): add it again with --oauth, sign in"
        if self._refused:
            return f"the server refused the connection ({self._refused})"
        return why(exc, None if self.server.transport == "stdio" else str(self.server.url))

    def _stderr_details(self) -> str:
        tail = self._stderr.excerpt(limit=DETAILS_CHARS)
        return f"It wrote to its standard error:\n{tail}" if tail else ""

    def said(self) -> str:
        """A short, redacted excerpt of what a local server wrote to stderr, as a clause."""
        text = self._stderr.excerpt()
        return f" (it wrote: {text})" if text else ""

    def _headers(self) -> dict[str, str]:
        headers = dict(self.server.headers)
        secrets = self._secrets if self._secrets is not None else Secrets()
        for key in self.server.secret_headers:
            value = secrets.get(secret_name(self.name, key))
            if value is None:
                raise McpError(
                    f"it needs the header {key}, which is not in the keyring",
                    details=f"Give {key} a value in File ▸ MCP servers… (the Secrets box) or"
                    f" with `harmony-desk mcp add {self.name}` and its secret options.",
                )
            headers[key] = value
        return headers

    async def _transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        kind, url = self.server.transport, str(self.server.url)
        if kind == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            env = environment(self.name, self.server, self._secrets or Secrets())
            program, args = guarded(self.name, self.server, env)
            self._program = resolve(str(self.server.command), env.get("PATH"))
            params = StdioServerParameters(command=program, args=args, env=env)
            streams = await stack.enter_async_context(
                stdio_client(params, errlog=self._stderr.sink)
            )
        elif kind == "sse":
            from mcp.client.sse import sse_client

            auth = self._auth(stack)
            streams = await stack.enter_async_context(
                sse_client(url, headers=self._headers(), auth=auth)
            )
        else:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            auth = self._auth(stack)
            client = await stack.enter_async_context(
                create_mcp_http_client(self._headers(), auth=auth)
            )
            client.event_hooks["response"].append(self._heard)
            streams = await stack.enter_async_context(
                streamable_http_client(url, http_client=client)
            )
        return streams[0], streams[1]

    def _auth(self, stack: contextlib.AsyncExitStack) -> Any:
        """An OAuth server's sign-in (its stored tokens, never a browser: `oauth.py`), its
        error unwrapped from the transport's task group; None for a server without OAuth."""
        if not self.server.oauth:
            return None
        from app.tools.mcp.oauth import connect_auth, sign_in_error

        stack.push_async_exit(sign_in_error)
        self._oauth = connect_auth(self.name, self.server, self._secrets or Secrets())
        return self._oauth

    async def _answer(self, work: Awaitable[T]) -> T:
        """A hook's answer to the server's request; while it is being made, the server's calls
        are not idle (it waits on the host), and its end counts as the server's last sign."""
        self._answering += 1
        try:
            return await work
        finally:
            self._answering -= 1
            self._answered = time.monotonic()

    async def _heard(self, response: Any) -> None:
        """Keep a remote server's last HTTP error: the SDK reports it only as "an error"."""
        if response.status_code >= 400:
            self._refused = f"HTTP {response.status_code} from {response.request.url}"

    async def _open(self) -> None:
        from mcp import ClientSession

        stack = contextlib.AsyncExitStack()
        try:
            read, write = await self._transport(stack)
            self._session = await stack.enter_async_context(
                ClientSession(read, write, **sdk_callbacks(self.hooks, self.name, self._answer))
            )
            await self._session.initialize()
        except BaseException as exc:
            first: BaseException = exc
            try:
                await stack.aclose()
            except BaseException as inner:  # the transport's own failure, behind a cancel
                first = inner if isinstance(exc, asyncio.CancelledError) else exc
            stopped = self._oauth.follow.take() if self._oauth else None
            if stopped is not None:  # a sign-in is needed (a 401 on initialize or a list)
                raise McpError(stopped.message, details=stopped.details, sign_in=stopped) from None
            if isinstance(first, HarmonyDeskError):  # a clause: the command, a secret, a header
                raise McpError(first.message, details=first.details) from None
            raise McpError(self._why(first), details=said(first)) from None
        self._stack = stack

    def start(self, timeout: float = START_S) -> McpConnection:
        """Start the server and its session (see the module guarantees for the error)."""
        try:
            self._wait(self._open(), timeout)
        except McpError as exc:
            self._stderr.started()
            local = self.server.transport == "stdio"
            status = self._stderr.status() if local else None
            tail = self._stderr.excerpt(limit=DETAILS_CHARS)
            hint = missing_module(self._program, tail) if local else ""
            details = facts(hint, exc.details, self._stderr_details())
            self.close()
            if exc.code is ErrorCode.TOOL_TIMEOUT:
                clause = f"it did not answer within {timeout:g} s"
            else:
                clause = ended(status) if status is not None else exc.message
            message = f"The MCP server “{self.name}” could not start: {clause}."
            raise McpError(message, details=details, sign_in=exc.sign_in) from None
        self._stderr.started()
        return self

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._gone and self._thread.is_alive()

    def tools(self, timeout: float = START_S) -> list[Any]:
        """The server's tools (the SDK's `Tool` values: name, description, input_schema)."""
        return list(self._wait(self._session.list_tools(), timeout).tools)

    def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        cancel: threading.Event | None = None,
        idle: float | None = None,
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> Any:
        """Call `tool`; the SDK's `CallToolResult` (`is_error` set for a tool's own error).
        `timeout` is the call's overall deadline: progress notifications never extend it; with
        `idle`, the call also ends after that many seconds without a result or progress; each
        progress notification is handed to `progress` (done, total, message)."""
        last = [0.0]

        async def heard(done: float, total: float | None, message: str | None) -> None:
            last[0] = time.monotonic()
            if progress is not None:
                progress(done, total, message)

        work = self._session.call_tool(tool, arguments, progress_callback=heard)
        return self._wait(work, timeout, cancel, lambda: last[0], idle)

    def resources(self, timeout: float = START_S) -> list[Any]:
        """The server's resources (uri, name, description, mime_type); none if it has none."""
        if not self._offers("resources"):
            return []
        return list(self._wait(self._session.list_resources(), timeout).resources)

    def read_resource(self, uri: str, timeout: float = START_S) -> Any:
        return self._wait(self._session.read_resource(uri), timeout)

    def prompts(self, timeout: float = START_S) -> list[Any]:
        """The server's prompts (name, description, arguments); none if it has none."""
        if not self._offers("prompts"):
            return []
        return list(self._wait(self._session.list_prompts(), timeout).prompts)

    def get_prompt(self, name: str, arguments: dict[str, str], timeout: float = START_S) -> Any:
        return self._wait(self._session.get_prompt(name, arguments), timeout)

    def _offers(self, what: str) -> bool:
        capabilities = self._session.server_capabilities
        return capabilities is not None and getattr(capabilities, what, None) is not None

    def close(self) -> None:
        """End the session and the server (idempotent)."""
        stack, self._stack = self._stack, None
        self._gone = True
        if stack is not None and self._loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(stack.aclose(), self._loop).result(10)
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()
        self._stderr.started()


__all__ = ["McpConnection", "McpError"]
