"""The window's side of MCP servers: what File ▸ MCP servers… and the composer ask for.

Guarantees: every call here may block (the config file, the keyring, starting a server) and is
made off the GUI thread by the caller; saving a server stores its secrets' values in the
keyring only (a blank value keeps the one stored) and stops its running session, so the next
use starts it as configured; a probe starts the server and says what it offers — every tool
(with the allow-list's choice), the prompt tokens the allowed ones add, its resources and
prompts — or why it could not start: an `McpError` whose `message` is one sentence for the
user and whose `details` hold the facts (its stderr, where its command was looked for); each
server's log is the pool's, every failure in it with its details; an OAuth server's sign-in is
read from the keyring (`sign_in`), made in the browser (`login`: `opener`, by default the
system's browser) or forgotten (`logout`), and either stops its session so that its next use
takes the new sign-in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.harmony.renderer import tool_tokens
from app.secrets import Secrets
from app.tools.mcp.config import (
    Imported,
    McpServer,
    add_server,
    import_servers,
    load_servers,
    remove_server,
    save_servers,
    secret_name,
)
from app.tools.mcp.results import prompt_messages, resource_text
from app.tools.mcp.tools import MCP_PREFIX, McpPool

if TYPE_CHECKING:
    from app.tools.mcp.oauth import SignIn


@dataclass(frozen=True)
class Probe:
    """What a started server offers."""

    tools: tuple[tuple[str, str, bool], ...]  # (its name, its description, allowed)
    tokens: int  # what the allowed tools add to each gpt-oss prompt
    resources: tuple[tuple[str, str], ...]  # (uri, name)
    prompts: tuple[tuple[str, str, tuple[str, ...]], ...]  # (name, description, arguments)


class McpHost:
    """See the module guarantees."""

    def __init__(self, pool: McpPool, secrets: Secrets | None = None) -> None:
        self.pool = pool
        self._secrets = secrets
        self.probes: dict[str, Probe] = {}  # the last probe of each server, for the menus
        self.opener: Callable[[str], object] | None = None  # the browser (None: the system's)

    @property
    def secrets(self) -> Secrets:
        if self._secrets is None:
            self._secrets = Secrets()
        return self._secrets

    def servers(self) -> dict[str, McpServer]:
        return load_servers()

    def save(self, name: str, server: McpServer, values: dict[str, str]) -> None:
        """Add or change `name`; `values` are its secrets (blank: keep the stored one)."""
        keep = {k for k in (*server.secret_env, *server.secret_headers) if not values.get(k)}
        stored = {k: self.secrets.get(secret_name(name, k)) or "" for k in keep}
        missing = [k for k, v in stored.items() if not v]
        if missing:
            raise ValueError(f"no value for the secret {', '.join(missing)}")
        add_server(name, server, self.secrets, {**stored, **{k: v for k, v in values.items() if v}})
        self.pool.stop(name)
        self.probes.pop(name, None)

    def remove(self, name: str) -> None:
        self.pool.stop(name)
        remove_server(name, self.secrets)
        self.probes.pop(name, None)

    def sign_in(self, name: str) -> SignIn:
        from app.tools.mcp.oauth import sign_in

        return sign_in(name, self.secrets)

    def login(self, name: str) -> SignIn:
        """Sign in to `name` in the browser (waits for it, up to its deadline)."""
        from app.tools.mcp.oauth import login

        signed = login(name, self.pool.server(name), self.secrets, self.opener)
        self.pool.stop(name)
        self.probes.pop(name, None)
        return signed

    def logout(self, name: str) -> SignIn:
        from app.tools.mcp.oauth import logout

        self.pool.stop(name)
        logout(name, self.secrets)
        self.probes.pop(name, None)
        return self.sign_in(name)

    def import_file(self, path: Path) -> Imported:
        found = import_servers(path, self.secrets)
        save_servers({**load_servers(), **found.servers})
        return found

    def probe(self, name: str) -> Probe:
        """Start `name` (if need be) and say what it offers."""
        allowed = self.pool.server(name).enabled_tools
        offered = self.pool.offered(name)
        kept = {own: allowed is None or own in allowed for own, _ in offered}
        connection = self.pool.connection(name)
        probe = Probe(
            tools=tuple((own, t.description, kept[own]) for own, t in offered),
            tokens=tool_tokens([t.description_for_model() for own, t in offered if kept[own]]),
            resources=tuple((str(r.uri), str(r.name)) for r in connection.resources()),
            prompts=tuple(
                (str(p.name), p.description or "", tuple(a.name for a in p.arguments or ()))
                for p in connection.prompts()
            ),
        )
        self.probes[name] = probe
        return probe

    def log(self, name: str) -> list[str]:
        return list(self.pool.logs.get(name, ()))

    def read(self, name: str, uri: str) -> str:
        return resource_text(self.pool.connection(name).read_resource(uri))

    def offer(self, what: tuple[str, str, str], arguments: dict[str, str]) -> str:
        """The text for the message box: a prompt (`("prompt", server, name)`) as the message,
        a resource (`("resource", server, uri)`) as context before it."""
        kind, server, key = what
        if kind == "prompt":
            return self.prompt(server, key, arguments)
        text = self.read(server, key)
        return f"Context from {server} ({key}):\n\n```\n{text}\n```\n\n"

    def prompt(self, name: str, prompt: str, arguments: dict[str, str]) -> str:
        """The prompt's messages as one text for the composer (roles named when several)."""
        messages = prompt_messages(self.pool.connection(name).get_prompt(prompt, arguments))
        if len(messages) == 1:
            return messages[0][1]
        return "\n\n".join(f"{role}: {text}" for role, text in messages)


__all__ = ["MCP_PREFIX", "McpHost", "McpServer", "Probe", "SignIn"]
