"""What went wrong with an MCP server, in words a person can read, and the facts behind them.

Guarantees: `why` and `ended` give a clause ("it exited with code 1 before answering", "nothing
answered at https://…") that names no exception class, shows no repr and no traceback; the
failure is told by its type (the SDK's `MCPError` and its code, the HTTP client's errors,
`OSError`), never by its text; `said` is the technical one-liner (the exception's class and
text) for an error's `details`, where `facts` gathers the pieces.
"""

from __future__ import annotations

import signal


def said(exc: BaseException) -> str:
    """An exception as its class and text (for details); a group by its first leaf."""
    exc = leaf(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def leaf(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups raise them); else `exc`."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def ended(status: int) -> str:
    """How a server that ended by itself ended, before answering."""
    if status == 0:
        return "it ended before answering"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = str(-status)
        return f"it was stopped by the signal {name} before answering"
    return f"it exited with code {status} before answering"


def why(exc: BaseException, url: str | None) -> str:
    """A server's failure as a clause (see the module guarantees); `url` for a remote one."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    exc = leaf(exc)
    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            return "it closed the connection without answering"
        return "it answered with an error"
    web = _web(exc, url)
    if web:
        return web
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, FileNotFoundError | PermissionError):
        return "its command could not be run"
    if isinstance(exc, OSError):
        return "the connection to it failed"
    return "it failed unexpectedly"


def _web(exc: BaseException, url: str | None) -> str:
    """A remote server's failure in words ("" for anything not from the HTTP client)."""
    import httpx2

    where = f" at {url}" if url else ""
    if isinstance(exc, httpx2.ConnectError):
        return f"nothing answered{where}"
    if isinstance(exc, httpx2.TimeoutException):
        return f"the server{where} did not answer in time"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"the server{where} answered HTTP {exc.response.status_code}"
    if isinstance(exc, httpx2.HTTPError):
        return f"the connection to the server{where} failed"
    return ""


def facts(*parts: str) -> str:
    """The details' pieces, blank ones left out, one paragraph each."""
    return "\n".join(p.strip() for p in parts if p and p.strip())


__all__ = ["ended", "facts", "leaf", "said", "why"]
