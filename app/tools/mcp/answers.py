"""The hooks a host with a person at it gives its MCP pool: a server's sampling requests and its
requests for input, asked of `host` (the window's or the terminal chat's), each noted in the
server's log and approved under the server's identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.tools.mcp.config import server_identity
from app.tools.mcp.elicit import Elicitor
from app.tools.mcp.hooks import McpHooks
from app.tools.mcp.sampling import Sampler

if TYPE_CHECKING:
    from app.tools.mcp.tools import McpPool


def asking_hooks(host: Any, pool: Callable[[], McpPool]) -> McpHooks:
    """Sampling and elicitation for `pool()`'s servers, asked of `host`."""

    def note(server: str, line: str) -> None:
        pool().note(server, line)

    def identity(server: str) -> str:
        return server_identity(pool().server(server))

    return McpHooks(
        sampling=Sampler(host, identity, note=note), elicitation=Elicitor(host, note=note)
    )


__all__ = ["asking_hooks"]
