"""What the host does with what an MCP server asks of it or tells it, beside tool calls.

Guarantees: `McpHooks` is the one seam between a connection (`client.py`) and the parts
of the host that answer a server: sampling (a server asks the conversation's model for a
completion), elicitation (a server asks the user for input), its log messages, its notices
that a list changed, and the protocol extensions the host supports (`extensions`: the window
declares MCP Apps when it can render them). (A remote server's OAuth sign-in is its
configuration's, not a hook's.)
Each hook is optional:
a connection declares to the server only the capabilities whose hook is set, so a server never
sees the host claim what it cannot do. Hooks are called on the connection's own event loop
thread with the server's name first; a hook that must wait for a person or a model hands the
work to another thread and is bounded by its own deadline (`asks.bounded`). The host's
answers: `sampling.Sampler` and `elicit.Elicitor`, each over the window's or the
terminal chat's way of asking (`app/controllers/mcp_asks.py`, `app/cli/mcp_asks.py`); a pool
made without them (`mcp` commands, the MCP page's test) declares neither. `caps` is what both
count against (`caps.Caps`): the pool starts a new call on it at each tool call, and a new
session when it stops a server; `run_turn` starts a new turn on it when a chat turn that offers
the pool's tools starts (`caps.begin_turns`: each of those tools carries these caps).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.tools.mcp.caps import Caps

Sampling = Callable[[str, Any], Awaitable[Any]]  # (server, CreateMessageRequestParams) → result
Elicitation = Callable[[str, Any], Awaitable[Any]]  # (server, ElicitRequestParams) → ElicitResult
Logged = Callable[[str, Any], None]  # (server, LoggingMessageNotificationParams)
Changed = Callable[[str, str], None]  # (server, "tools" | "resources" | "prompts")


@dataclass(frozen=True)
class McpHooks:
    """See the module guarantees."""

    sampling: Sampling | None = None
    elicitation: Elicitation | None = None
    logged: Logged | None = None
    changed: Changed | None = None
    caps: Caps | None = None
    extensions: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # declared as given


NO_HOOKS = McpHooks()


def sdk_callbacks(
    hooks: McpHooks, name: str, answer: Callable[[Awaitable[Any]], Awaitable[Any]]
) -> dict[str, Any]:
    """The SDK session's arguments for the hooks that are set, for server `name`: the session
    declares sampling and elicitation only when the host answers them (each answer made
    through `answer`, the connection's: while it is made the server waits on the host), and
    the extensions the host supports (`extensions`)."""
    out: dict[str, Any] = {}
    if hooks.sampling is not None:
        sampling = hooks.sampling

        async def sample(_context: Any, params: Any) -> Any:
            return await answer(sampling(name, params))

        out["sampling_callback"] = sample
    if hooks.elicitation is not None:
        elicitation = hooks.elicitation

        async def elicit(_context: Any, params: Any) -> Any:
            return await answer(elicitation(name, params))

        out["elicitation_callback"] = elicit
    if hooks.logged is not None:
        logged = hooks.logged

        async def log(params: Any) -> None:
            logged(name, params)

        out["logging_callback"] = log
    if hooks.changed is not None:
        out["message_handler"] = _changes(hooks.changed, name)
    if hooks.extensions:
        out["extensions"] = dict(hooks.extensions)
    return out


def _changes(changed: Changed, name: str) -> Callable[[Any], Awaitable[None]]:
    async def handle(message: Any) -> None:
        method = str(getattr(getattr(message, "root", message), "method", ""))
        for what in ("tools", "resources", "prompts"):
            if method == f"notifications/{what}/list_changed":
                changed(name, what)

    return handle


__all__ = ["NO_HOOKS", "Changed", "Elicitation", "Logged", "McpHooks", "Sampling", "sdk_callbacks"]
