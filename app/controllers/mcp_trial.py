"""Testing an MCP server as the form shows it, before (or without) saving it.

Guarantees: `try_server` starts the server described by the form — a new one, or a saved one
with edits — in a pool of its own (the app's pool, its saved servers and the conversations
using them are untouched), says what it offers as the same `Probe` a saved server's test gives,
and stops it again, whether it answered or not; the secret values typed in the form are used
for this start only and never written anywhere (a blank one falls back to the keyring's stored
value, as saving would keep it); a failure is the same `McpError` a saved server's start
raises. `unchanged` says whether the form is the saved server as it is (then the saved one is
tested, and its probe kept for the menus). `name_problem` says why a typed name is not a
server name ("" when it is one).
"""

from __future__ import annotations

from app.controllers.mcp_host import McpHost, Probe
from app.errors import InvalidInputError
from app.secrets import Secrets
from app.tools.mcp.config import McpServer, check_name, secret_name
from app.tools.mcp.tools import McpPool


def name_problem(name: str) -> str:
    """Why `name` cannot name a server, or "" when it can."""
    try:
        check_name(name)
    except InvalidInputError as exc:
        return exc.message
    return ""


class TypedSecrets(Secrets):
    """The keyring's values with the form's typed ones in front; nothing is ever stored."""

    def __init__(self, stored: Secrets, typed: dict[str, str]) -> None:
        self.backend, self.problem, self._memory = stored.backend, stored.problem, {}
        self._stored, self._typed = stored, typed

    def get(self, name: str) -> str | None:
        return self._typed.get(name) or self._stored.get(name)

    def set(self, name: str, key: str) -> None:
        self._typed[name] = key  # a trial's sign-in lasts as long as the trial


def unchanged(saved: McpServer | None, form: McpServer, values: dict[str, str]) -> bool:
    """Whether the form is `saved` as it is: no edit, no secret typed (the allow-list aside,
    which a test is there to choose)."""
    if saved is None or any(values.values()):
        return False
    return form.model_copy(update={"enabled_tools": saved.enabled_tools}) == saved


def try_server(host: McpHost, name: str, server: McpServer, values: dict[str, str]) -> Probe:
    """Start the form's server on its own, say what it offers, stop it (see the guarantees)."""
    typed = {secret_name(name, key): value for key, value in values.items() if value}
    secrets = TypedSecrets(host.secrets, typed)
    pool = McpPool(lambda: {name: server}, secrets)
    try:
        return McpHost(pool, secrets).probe(name)
    finally:
        pool.close()


__all__ = ["TypedSecrets", "try_server", "unchanged"]
