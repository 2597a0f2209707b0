"""MCP servers the user configured: `mcp.json` in the config folder, in the `mcpServers` shape
other apps use, with every secret in the OS keyring.

Guarantees: the file is validated with pydantic (`extra="forbid"`; an error names the server
and the field); a server is local (`command`, `args`, `env`) or remote (`url`, `headers`),
never both; only a remote one may sign in with OAuth 2.1 (`oauth`; its tokens and client
registration are kept in the keyring by `oauth.py` and go when the server is removed; a
pre-registered client's secret or private key, `oauth_client.py`, is kept there too); a
secret (`--secret-env`, `--secret-header`, or an imported value that looks like one) is stored
in the keyring under `mcp.SERVER.NAME` and the file keeps only its name, so no file the app
writes holds it; the file is written atomically and readable by the user only;
`import_servers` reads Claude Desktop, Cursor and LM Studio files (`mcpServers`) and VS Code's
(`servers`, with `type` and `${input:…}` references), moves what looks secret to the keyring and
says which values it moved. "Looks secret" is a name that says so (`…_TOKEN`, `Authorization`)
or a value of a secret shape (`app.domain.redact.looks_secret`: `hf_…`, `postgres://u:pw@…`).
A secret where the keyring cannot stand in for it — in a command's arguments (`--api-key sk-…`)
or a URL (`user:pw@`, `?api_key=`) — is refused: `add_server` refuses the server, and an import
skips it, each saying where the secret is (never the secret). An import never replaces a
configured server nor takes two servers under one name, and every name it keeps is a valid one
(none that starts with `-`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.domain.endpoint import url_without_credentials
from app.domain.redact import SECRET_NAME, looks_secret
from app.errors import InvalidInputError
from app.fileio import write_atomic
from app.inputs import load_json, read_text_file
from app.paths import config_dir
from app.secrets import Secrets
from app.tools.mcp.oauth_client import CLIENT_ENTRIES, OAuthClient, signing_algorithm

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
SECRET_WORDS = re.compile(r"key|token|secret|password|passwd|auth|credential|bearer", re.I)


class McpServer(BaseModel):
    """One server: local (`command`) or remote (`url`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(None, description="The program that runs a local server.")
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="Plain environment values.")
    secret_env: tuple[str, ...] = Field((), description="Environment names kept in the keyring.")
    url: str | None = Field(None, description="A remote server (Streamable HTTP or SSE).")
    headers: dict[str, str] = Field(default_factory=dict)
    secret_headers: tuple[str, ...] = Field((), description="Header names kept in the keyring.")
    type: Literal["stdio", "http", "sse"] | None = Field(
        None,
        description="How to reach it (None: stdio for a command; http, or sse for a url"
        " ending in /sse).",
    )
    timeout: float = Field(
        60.0, gt=0, le=3600, description="Seconds a call may go without a result or progress."
    )
    enabled_tools: tuple[str, ...] | None = Field(
        None, description="Only these of its tools (None: all)."
    )
    oauth: bool = Field(
        False, description="Sign in with OAuth 2.1 (a remote server; tokens in the keyring)."
    )
    oauth_client: OAuthClient | None = Field(
        None, description="Who the app is to its authorization server (None: it registers)."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("a server has either a command (local) or a url (remote)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.oauth and self.url is None:
            raise ValueError("oauth is for a remote server (a url), not a command")
        if self.oauth_client is not None and not self.oauth:
            raise ValueError("an OAuth client is for a server that signs in with OAuth (--oauth)")
        if (self.type == "stdio") != (self.command is not None) and self.type is not None:
            raise ValueError(
                f"type {self.type!r} does not fit a {'url' if self.url else 'command'}"
            )
        return self

    @property
    def transport(self) -> Literal["stdio", "http", "sse"]:
        if self.type is not None:
            return self.type
        if self.url is None:
            return "stdio"
        return "sse" if self.url.rstrip("/").endswith("/sse") else "http"

    @property
    def remote(self) -> bool:
        return self.url is not None


class McpFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mcpServers: dict[str, McpServer] = Field(default_factory=dict)


def server_identity(server: McpServer) -> str:
    """A short digest of what the server is (its command and arguments, or its URL): the key
    its tools' approvals are kept under, beside their names (no secret argument is spelt)."""
    what = [server.url] if server.url is not None else [server.command, *server.args]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


OAUTH_ENTRIES = ("oauth-tokens", "oauth-client")  # a server's sign-in, in the keyring


def secret_name(server: str, name: str) -> str:
    """The keyring entry of a server's secret (`mcp.SERVER.NAME`, within the keyring's rules)."""
    return f"mcp.{server}.{re.sub(r'[^A-Za-z0-9_-]', '_', name)}"[:64]


def mcp_path() -> Path:
    return config_dir() / "mcp.json"


def load_servers(path: Path | None = None) -> dict[str, McpServer]:
    """The configured servers (none when there is no file); an invalid file is an error that
    names the server and the field."""
    path = path or mcp_path()
    if not path.exists():
        return {}
    data = _read(path)
    try:
        return dict(McpFile.model_validate(data).mcpServers)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise InvalidInputError(f"{path} is not a valid MCP configuration ({where})") from None


def _read(path: Path) -> Any:
    try:
        return load_json(read_text_file(path))
    except ValueError as exc:  # not JSON
        raise InvalidInputError(f"{path} is not JSON ({exc})") from None


def save_servers(servers: dict[str, McpServer], path: Path | None = None) -> None:
    path = path or mcp_path()
    body = {"mcpServers": {n: s.model_dump(exclude_defaults=True) for n, s in servers.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(body, indent=2, sort_keys=True) + "\n")
    os.chmod(path, 0o600)


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise InvalidInputError(
            f"{name!r} is not a server name: letters, digits, '_' and '-' (up to 40)"
        )
    return name


def secret_places(server: McpServer) -> list[str]:
    """Where `server` keeps a secret in plain text (an argument, its URL, an env value, a
    header), named without the secret; none for a server whose secrets are all in the keyring."""
    args = server.args
    places = [
        f"argument {i + 1}"
        for i, arg in enumerate(args)
        if looks_secret(arg) or (i > 0 and looks_secret(f"{args[i - 1]} {arg}"))
    ]
    if server.url is not None and _url_secret(server.url):
        places.append("the url")
    places += [f"env {k}" for k, v in server.env.items() if _looks_secret(k, v)]
    return places + [f"header {k}" for k, v in server.headers.items() if _looks_secret(k, v)]


def _url_secret(url: str) -> bool:
    try:
        url_without_credentials(url)
    except ValueError:
        return True
    return looks_secret(url)


def _refuse_plain_secrets(name: str, server: McpServer) -> None:
    places = secret_places(server)
    if places:
        raise InvalidInputError(
            f"{name} would keep a secret in plain text ({', '.join(places)}): give an"
            " environment value or a header with --secret-env / --secret-header instead"
        )


def add_server(
    name: str, server: McpServer, secrets: Secrets, values: dict[str, str], path: Path | None = None
) -> None:
    """Add (or replace) `name`; `values` are its secrets' values, stored in the keyring; a server
    that keeps a secret in plain text is refused, saying where."""
    check_name(name)
    _refuse_plain_secrets(name, server)
    for key in (*server.secret_env, *server.secret_headers):
        if key not in values:
            raise InvalidInputError(f"no value was given for the secret {key!r}")
        secrets.set(secret_name(name, key), values[key])
    _client_secret(name, server, secrets, values)
    save_servers({**load_servers(path), name: server}, path)


def _client_secret(name: str, server: McpServer, secrets: Secrets, values: dict[str, str]) -> None:
    """Store the OAuth client's secret or private key (`values` under its entry name); one
    already stored is kept when none is given; none at all is an error that says which."""
    entry = server.oauth_client.entry if server.oauth_client is not None else None
    if entry is None:
        return
    if values.get(entry):
        if entry == CLIENT_ENTRIES[1]:  # a private key the app cannot sign with is refused
            try:
                signing_algorithm(values[entry])
            except ValueError as exc:
                raise InvalidInputError(f"{name}'s private key is not usable: {exc}") from None
        secrets.set(secret_name(name, entry), values[entry])
    elif secrets.get(secret_name(name, entry)) is None:
        what = "private key" if entry == CLIENT_ENTRIES[1] else "client secret"
        raise InvalidInputError(f"no {what} was given for {name}'s OAuth client")


def remove_server(name: str, secrets: Secrets, path: Path | None = None) -> bool:
    """Forget `name`, its secrets and its sign-in; whether it was there."""
    servers = load_servers(path)
    server = servers.pop(name, None)
    if server is None:
        return False
    for key in (*server.secret_env, *server.secret_headers, *OAUTH_ENTRIES, *CLIENT_ENTRIES):
        secrets.delete(secret_name(name, key))
    save_servers(servers, path)
    return True


@dataclass(frozen=True)
class Imported:
    servers: dict[str, McpServer]
    moved: tuple[str, ...]  # "SERVER: NAME" of each value moved to the keyring
    skipped: tuple[str, ...]  # "SERVER: why" of each entry left out


def _looks_secret(name: str, value: str) -> bool:
    words = SECRET_WORDS.search(name) or SECRET_NAME.search(name)
    return bool(words) or looks_secret(value) or looks_secret(f"{name}={value}")


def _entries(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidInputError("an MCP configuration is a JSON object")
    for key in ("mcpServers", "servers"):  # Claude Desktop, Cursor, LM Studio; VS Code
        if isinstance(data.get(key), dict):
            return data[key]  # type: ignore[no-any-return]
    mcp = data.get("mcp")
    if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict):  # VS Code settings.json
        return mcp["servers"]  # type: ignore[no-any-return]
    raise InvalidInputError("no `mcpServers` (or VS Code `servers`) object in this file")


def _split(
    server: str, values: dict[str, Any], secrets: Secrets, moved: list[str]
) -> tuple[dict[str, str], tuple[str, ...]]:
    plain: dict[str, str] = {}
    hidden: list[str] = []
    for key, value in values.items():
        text = str(value)
        if "${input:" in text:  # VS Code asks for it at start: the user sets it here later
            hidden.append(key)
            moved.append(f"{server}: {key} (asked by VS Code: set it with `mcp add`)")
        elif _looks_secret(key, text):
            secrets.set(secret_name(server, key), text)
            hidden.append(key)
            moved.append(f"{server}: {key}")
        else:
            plain[key] = text
    return plain, tuple(hidden)


def _kind(value: Any) -> Any:
    """Another app's transport name as ours (`streamable-http` is `http`; unknown: ours)."""
    known = {
        "stdio": "stdio",
        "http": "http",
        "streamable-http": "http",
        "streamablehttp": "http",
        "sse": "sse",
    }
    return known.get(str(value).lower()) if value else None


def _import_name(raw_name: Any, taken: set[str]) -> tuple[str, str]:
    """(our name for an imported entry, why it is skipped: "" when it is not)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", str(raw_name))[:40]
    if not NAME.match(name):
        name = f"server-{name.lstrip('-_')}"[:40].rstrip("-") if name.strip("-_") else ""
    if not name or not NAME.match(name):
        return "", "not a usable server name"
    if name in taken:
        return "", f"the name {name} is taken: remove or rename that server first"
    return name, ""


def import_servers(
    path: Path, secrets: Secrets, existing: Collection[str] | None = None
) -> Imported:
    """Servers from another app's file, with what looks secret moved to the keyring; none that
    takes the name of one in `existing` (None: the configured servers) or of another in the file,
    none that keeps a secret where the keyring cannot stand in for it."""
    entries = _entries(_read(path))
    taken = set(load_servers() if existing is None else existing)
    servers: dict[str, McpServer] = {}
    moved: list[str] = []
    skipped: list[str] = []
    for raw_name, entry in entries.items():
        name, why = _import_name(raw_name, taken)
        if not why and not isinstance(entry, dict):
            why = "not an object"
        if why:
            skipped.append(f"{raw_name}: {why}")
            continue
        try:
            server = _imported(name, entry, secrets, moved)
        except (ValidationError, InvalidInputError) as exc:
            why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else exc.message
            skipped.append(f"{raw_name}: {why}")
            continue
        servers[name] = server
        taken.add(name)
    return Imported(servers, tuple(moved), tuple(skipped))


def _imported(name: str, entry: dict[str, Any], secrets: Secrets, moved: list[str]) -> McpServer:
    """One entry as our server, its secrets moved (only once it is known to be kept)."""
    plain = McpServer(
        command=entry.get("command"),
        args=tuple(str(a) for a in entry.get("args") or ()),
        url=entry.get("url") or entry.get("serverUrl"),
        type=_kind(entry.get("type") or entry.get("transport")),
    )
    places = secret_places(plain)
    if places:
        raise InvalidInputError(
            f"refused: a secret in plain text ({', '.join(places)}) the keyring cannot hold;"
            " add it by hand with --secret-env or --secret-header"
        )
    env, secret_env = _split(name, entry.get("env") or {}, secrets, moved)
    headers, secret_headers = _split(name, entry.get("headers") or {}, secrets, moved)
    return plain.model_copy(
        update={
            "env": env,
            "secret_env": secret_env,
            "headers": headers,
            "secret_headers": secret_headers,
        }
    )


__all__ = [
    "OAUTH_ENTRIES",
    "Imported",
    "McpServer",
    "add_server",
    "check_name",
    "import_servers",
    "load_servers",
    "mcp_path",
    "remove_server",
    "save_servers",
    "secret_name",
    "secret_places",
    "server_identity",
]
