"""Coding agents' own configuration files, pointed at Harmony Desk's local server.

One small pure module per client (`CLIENTS`), each with `NAME`, `TITLE`, `SOURCE` (where its
format was checked), `NOTE` (what the user should know that no file of the client can say) and
`edits(target, env, home)`: the files it reads and what to set in each, as values; beside them
`formats` (the files' text to documents that keep their comments, and back), `nodes` (edits
inside such a document), `merge` (changes into a document, and out) and `connecting`, the only
module here that reads and writes files: connect, preview and undo, run by both `harmony-desk
connect` and the window's Serve page. Nothing here looks at the process's environment: `env` and
`home` come in, so the same call answers for any user.

Guarantees: every edit names a user-level file the client reads (its own override variable, such
as `CODEX_HOME`, wins over `home`); an edit sets leaves, adds (or replaces) one entry of a list
by its key (`Upsert`), writes its own provider's table as a whole (`Whole`) and sets a value
only where the file has none (`Default`), so the user's other settings are never in its way; the
base URL is the server's root for Anthropic clients and `…/v1` for OpenAI ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

Format = Literal["json", "toml", "yaml"]
PLACEHOLDER_KEY = "harmony-desk"  # a keyless loopback server takes any key
PROVIDER_ID = "harmony-desk"  # the name our provider or model entry has in a client's file


@dataclass(frozen=True)
class Target:
    """What a client is pointed at: the server's root URL (no trailing slash), the key it sends
    (the server's token, or `PLACEHOLDER_KEY`), the model name, and the sizes that fit it."""

    root: str
    key: str
    model: str
    context: int
    max_tokens: int

    @property
    def v1(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"{self.root}/v1"


@dataclass(frozen=True)
class Upsert:
    """One entry of a list, found by its `field`: replaced where the list has one with the same
    value there, else appended."""

    field: str
    entry: Mapping[str, Any]


@dataclass(frozen=True)
class Whole:
    """A table that is ours as a whole (our provider's): written over, not merged into, and
    removed as a whole on undo; with `ours`, undo also removes the entries beside it that
    `ours` accepts (ours from a run with another model, under that model's key)."""

    value: Mapping[str, Any]
    ours: Callable[[Any], bool] | None = None


@dataclass(frozen=True)
class Default:
    """A value set only where the file has none (a field a new file must have)."""

    value: Any


# nested: a Mapping merges into a table, a Whole replaces one, an Upsert adds one entry to a
# list, a Default fills a gap; anything else is a leaf value
Changes = Mapping[str, Any]


@dataclass(frozen=True)
class FileEdit:
    """What to change in one file: `changes` for a file that is a table, `Upsert` for one that
    is a list (llm's); `all_secret` for a file whose every value is a key (llm's keys.json)."""

    path: Path
    format: Format
    changes: Changes | Upsert
    all_secret: bool = False


class Client(Protocol):
    NAME: str
    TITLE: str  # the client's own name, as its makers write it
    SOURCE: str
    NOTE: str

    def edits(self, target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]: ...


# client name → its module in this package
CLIENTS = {
    "claude-code": "claude_code",
    "codex": "codex",
    "opencode": "opencode",
    "qwen-code": "qwen_code",
    "aider": "aider",
    "continue": "continue_dev",
    "llm": "llm_cli",
}


def client(name: str) -> Client:
    """The module that configures `name` (one of `CLIENTS`)."""
    return cast(Client, importlib.import_module(f"app.clients.{CLIENTS[name]}"))


def folder(env: Mapping[str, str], variable: str, default: Path) -> Path:
    """The folder a client's own variable names, else its `default`."""
    return Path(env[variable]) if env.get(variable) else default


def xdg_config(env: Mapping[str, str], home: Path) -> Path:
    """`$XDG_CONFIG_HOME`, else `~/.config`."""
    return folder(env, "XDG_CONFIG_HOME", home / ".config")


__all__ = [
    "CLIENTS",
    "PLACEHOLDER_KEY",
    "PROVIDER_ID",
    "Changes",
    "Client",
    "Default",
    "FileEdit",
    "Format",
    "Target",
    "Upsert",
    "Whole",
    "client",
    "folder",
    "xdg_config",
]
