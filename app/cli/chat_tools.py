"""The terminal chat's tools: those named on the command line, the MCP servers it starts (with
what they may ask beside tool calls answered at the terminal, `app/cli/mcp_asks.py`), and the
fresh sessions a server's sampling request is answered by.

Guarantees: an unknown tool name is a clear error before the model loads, and the MCP servers
started so far are stopped with it; `close_tools` ends the conversation's tools and the servers
this command started; a sampling session is a new one over the chat's own backend — the
worker and template it loaded (sharing its tokenizer), or its remote endpoint with the key
read from the keyring again — never the chat's conversation.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.mcp_asks import TerminalAsks
from app.cli.tools_prepare import tell_terminal
from app.errors import InvalidInputError
from app.tools.mcp.tools import MCP_PREFIX, McpPool
from app.tools.session import ConversationTools, ToolOptions, UnknownToolError

if TYPE_CHECKING:
    from app.engine.local.serving import Loaded
    from app.engine.local.session import ChatSession
    from app.engine.remote.session import RemoteSession
    from app.tools.mcp.sampling import SampleRequest


def conversation_tools(args: argparse.Namespace, asks: TerminalAsks) -> ConversationTools | None:
    """The conversation's tools named on the command line (a clear error for an unknown name)."""
    names = [n.strip() for n in (args.tools or "").split(",") if n.strip()]
    names += [MCP_PREFIX + n.strip() for n in (args.mcp or "").split(",") if n.strip()]
    if not names:
        return None
    options = ToolOptions(
        enabled=tuple(names),
        offline=args.offline,
        granted_folders=tuple(args.grant),
        writable_folders=tuple(args.grant_writable),
        search=args.search,
        searxng_url=args.searxng_url,
        allow_private_addresses=args.allow_local_addresses,
    )
    pool: McpPool | None = None
    if args.mcp:
        made: list[McpPool] = []  # the hooks find the pool they belong to here
        pool = McpPool(hooks=asks.hooks(lambda: made[0]))
        made.append(pool)
    try:
        tools = ConversationTools(options, mcp=pool)
    except UnknownToolError as exc:
        if pool is not None:
            pool.close()
        raise InvalidInputError(exc.message) from exc
    tell_terminal(tools)  # a first python call that waits for the runtime's compile says so
    return tools


def close_tools(tools: ConversationTools) -> None:
    """End the conversation's tools and the MCP servers this command started."""
    tools.close()
    if tools.mcp is not None:
        tools.mcp.close()


def local_sessions(
    session: ChatSession, loaded: Loaded
) -> Callable[[SampleRequest], tuple[ChatSession, str]]:
    """Fresh sessions over the chat's worker and template, for sampling requests."""
    from app.engine.local.session import ChatSession

    def fresh(request: SampleRequest) -> tuple[ChatSession, str]:
        made = ChatSession(
            session.client,
            loaded.template,
            sampling=loaded.sampling,
            max_tokens=request.max_tokens,
            tokenizer=session.tokenizer,
        )
        return made, Path(loaded.path).name

    return fresh


def remote_sessions(session: RemoteSession) -> Callable[[SampleRequest], tuple[RemoteSession, str]]:
    """Fresh sessions with the chat's remote endpoint, for sampling requests."""
    from app.engine.remote.session import RemoteSession
    from app.secrets import Secrets

    def fresh(request: SampleRequest) -> tuple[RemoteSession, str]:
        endpoint = session.endpoint
        key = Secrets().key_for(endpoint)
        made = RemoteSession(
            endpoint, key, sampling=session.sampling, max_tokens=request.max_tokens
        )
        return made, endpoint.model

    return fresh


__all__ = ["close_tools", "conversation_tools", "local_sessions", "remote_sessions"]
