"""A connection to one local MCP server over stdio, through the official `mcp` SDK, behind a
blocking interface the tool host can call from any thread.

Guarantees: the SDK's session runs on a private asyncio loop in its own thread, so a slow or
hung server never blocks the caller past its deadline (`McpError` E-TOOL-TIMEOUT); the server
sees the user's environment, the plain values from `mcp.json` and its secrets read from the
keyring at start (never from a file); a server that cannot start or dies says so with the end
of what it wrote to stderr; `close` ends the session and the server process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from app.errors import ErrorCode, HarmonyDeskError
from app.secrets import Secrets
from app.tools.mcp_config import McpServer, secret_name

T = TypeVar("T")
START_S = 30.0


class McpError(HarmonyDeskError):
    """A server that cannot start, answer in time, or that failed a request."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.TOOL_ERROR) -> None:
        super().__init__(message)
        self.message, self.code = message, code


class McpConnection:
    """One started local server (see the module guarantees)."""

    def __init__(self, name: str, server: McpServer, secrets: Secrets | None = None) -> None:
        if server.command is None:
            raise McpError(f"{name} is a remote server; this connection runs local ones")
        self.name, self.server = name, server
        self._secrets = secrets
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}",
                                        daemon=True)  # fmt: skip
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: Any = None
        self._stderr = tempfile.TemporaryFile(  # noqa: SIM115 - held open until `close`
            mode="w+", encoding="utf-8", errors="replace"
        )
        self._thread.start()

    def _environment(self) -> dict[str, str]:
        env = {**os.environ, **self.server.env}
        secrets = self._secrets if self._secrets is not None else Secrets()
        for key in self.server.secret_env:
            value = secrets.get(secret_name(self.name, key))
            if value is None:
                raise McpError(
                    f"{self.name} needs {key}, which is not in the keyring:"
                    f" `harmony-desk mcp add {self.name} --secret-env {key} -- ...`"
                )
            env[key] = value
        return env

    def _run(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()  # the SDK's request is cancelled on the server too
            raise McpError(
                f"{self.name} did not answer within {timeout:.0f} s", ErrorCode.TOOL_TIMEOUT
            ) from None
        except McpError:
            raise
        except Exception as exc:  # the SDK and the pipe raise many kinds
            raise McpError(f"{self.name}: {type(exc).__name__}: {exc}{self._said()}") from None

    def _said(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read()[-2000:].strip()
        return f" (it wrote: {text})" if text else ""

    async def _open(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=str(self.server.command), args=list(self.server.args), env=self._environment()
        )
        stack = contextlib.AsyncExitStack()
        read, write = await stack.enter_async_context(stdio_client(params, errlog=self._stderr))
        self._session = await stack.enter_async_context(ClientSession(read, write))
        await self._session.initialize()
        self._stack = stack

    def start(self, timeout: float = START_S) -> McpConnection:
        """Start the server and its session (a clear error when it cannot)."""
        try:
            self._run(self._open(), timeout)
        except McpError as exc:
            self.close()
            raise McpError(f"{self.name} could not start: {exc.message}") from None
        return self

    def tools(self, timeout: float = START_S) -> list[Any]:
        """The server's tools (the SDK's `Tool` values: name, description, input_schema)."""
        result = self._run(self._session.list_tools(), timeout)
        return list(result.tools)

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """Call `tool`; the SDK's `CallToolResult` (`is_error` set for a tool's own error)."""
        return self._run(self._session.call_tool(tool, arguments), timeout)

    def close(self) -> None:
        """End the session and the server (idempotent)."""
        stack, self._stack = self._stack, None
        if stack is not None and self._loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(stack.aclose(), self._loop).result(10)
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        self._stderr.close()


MAX_RESULT_CHARS = 20_000


def envelope(result: Any, limit: int = MAX_RESULT_CHARS) -> dict[str, Any]:
    """A tool result as the model reads it: text parts joined (images and other parts as a
    notice), structured content kept, the server's `is_error` as the envelope's error, and
    anything past `limit` characters cut with a marker that says so."""
    parts = []
    for part in getattr(result, "content", None) or ():
        kind = getattr(part, "type", "")
        if kind == "text":
            parts.append(str(part.text))
        else:
            parts.append(f"[{kind or 'a part'} ({getattr(part, 'mime_type', '') or 'no type'})"
                         " left out: only text reaches the model]")  # fmt: skip
    text = "\n".join(parts)
    if len(text) > limit:
        text = text[:limit] + f"\n[cut: {len(text) - limit} more characters]"
    if getattr(result, "is_error", False):
        return {"ok": False, "error": {"code": ErrorCode.TOOL_ERROR.value, "message": text}}
    structured = getattr(result, "structured_content", None)
    if structured is not None and len(json.dumps(structured, ensure_ascii=False)) <= limit:
        return {"ok": True, "content": structured}
    return {"ok": True, "content": text}  # the text, cut where it had to be


__all__ = ["MAX_RESULT_CHARS", "McpConnection", "McpError", "envelope"]
