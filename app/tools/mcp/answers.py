"""The hooks a host with a person at it gives its MCP pool: a server's sampling requests and its
requests for input, asked of `host` (the window's or the terminal chat's), each noted in the
server's log, approved under the server's identity, and counted against one `Caps` for both
(`caps.py`: per call, per server, and per chat turn across all the pool's servers) — a host
that can tell the person (`Telling`) is told when a cap is reached."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from app.tools.mcp.caps import Caps
from app.tools.mcp.config import server_identity
from app.tools.mcp.elicit import Elicitor
from app.tools.mcp.hooks import McpHooks
from app.tools.mcp.sampling import Sampler

if TYPE_CHECKING:
    from app.tools.mcp.tools import McpPool


@runtime_checkable
class Telling(Protocol):
    """A host that can say one sentence to the person (the terminal's stderr)."""

    def told(self, server: str, sentence: str) -> None: ...


def asking_hooks(host: Any, pool: Callable[[], McpPool]) -> McpHooks:
    """Sampling and elicitation for `pool()`'s servers, asked of `host`."""

    def note(server: str, line: str) -> None:
        pool().note(server, line)

    def identity(server: str) -> str:
        return server_identity(pool().server(server))

    caps = Caps(told=host.told if isinstance(host, Telling) else None)
    return McpHooks(
        sampling=Sampler(host, identity, note=note, caps=caps),
        elicitation=Elicitor(host, note=note, caps=caps),
        caps=caps,
    )


__all__ = ["Telling", "asking_hooks"]
