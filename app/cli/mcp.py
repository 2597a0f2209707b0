"""`harmony-desk mcp list|add|remove|import|tools|call`: the MCP servers the user configured.

Guarantees: `add NAME -- COMMAND [ARGS…]` (`--env KEY=VALUE`, `--secret-env KEY`) and
`add NAME --url URL` (`--header K=V`, `--secret-header K`) write `mcp.json`; a secret's value is
asked for (not shown on a terminal; one line each from a pipe) and stored in the keyring only;
`import FILE` reads another app's file and says which values it moved to the keyring; `list`
prints one JSON line per server (secrets by name only); exit 2 with the reason for a bad name,
value or file; exit 1 when the keyring cannot keep a secret (nothing is written then);
`tools NAME` prints one JSON line per tool (name, description, input schema); `call NAME TOOL
'JSON'` prints the result's envelope as JSON and exits 1 on the tool's own error.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from app.errors import InvalidInputError
from app.secrets import Secrets
from app.tools.mcp_client import McpConnection, envelope
from app.tools.mcp_config import (
    McpServer,
    add_server,
    import_servers,
    load_servers,
    remove_server,
    save_servers,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="the configured servers, one JSON line each")
    add = verbs.add_parser("add", help="add a local (-- COMMAND ...) or remote (--url) server")
    add.add_argument("name")
    add.add_argument("--url", help="a remote server's address")
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    add.add_argument("--secret-env", action="append", default=[], metavar="KEY")
    add.add_argument("--header", action="append", default=[], metavar="KEY=VALUE")
    add.add_argument("--secret-header", action="append", default=[], metavar="KEY")
    add.add_argument(
        "server_command", nargs="*", metavar="COMMAND", help="after --: its program and arguments"
    )
    remove = verbs.add_parser("remove", help="forget a server and its secrets")
    remove.add_argument("name")
    tools = verbs.add_parser("tools", help="a local server's tools, one JSON line each")
    tools.add_argument("name")
    call = verbs.add_parser("call", help="call a local server's tool; its result as JSON")
    call.add_argument("name")
    call.add_argument("tool")
    call.add_argument("arguments", help="the arguments, a JSON object")
    call.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    imported = verbs.add_parser("import", help="servers from Claude Desktop, Cursor, LM Studio"
                                " or VS Code (secrets moved to the keyring)")  # fmt: skip
    imported.add_argument("file", type=Path)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"{what} {item!r} is not KEY=VALUE")
        pairs[key] = value
    return pairs


def _ask(name: str) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"value of {name} (not shown): ")
    return sys.stdin.readline().rstrip("\n")


def _add(args: argparse.Namespace, secrets: Secrets) -> int:
    command = [c for c in args.server_command if c != "--"] if args.server_command else []
    hidden = [*args.secret_env, *args.secret_header]
    if hidden and not secrets.saved:
        print(f"not stored: {secrets.problem}", file=sys.stderr)
        return 1
    try:
        server = McpServer(
            command=command[0] if command else None,
            args=tuple(command[1:]),
            env=_pairs(args.env, "--env"),
            secret_env=tuple(args.secret_env),
            url=args.url,
            headers=_pairs(args.header, "--header"),
            secret_headers=tuple(args.secret_header),
        )
    except ValidationError as exc:
        raise InvalidInputError(f"the server is not valid: {exc.errors()[0]['msg']}") from None
    add_server(args.name, server, secrets, {name: _ask(name) for name in hidden})
    print(f"MCP server {args.name} saved", file=sys.stderr)
    return 0


def _use(args: argparse.Namespace, secrets: Secrets) -> int:
    server = load_servers().get(args.name)
    if server is None:
        raise InvalidInputError(f"no MCP server named {args.name!r} (see `harmony-desk mcp list`)")
    try:
        arguments = json.loads(args.arguments) if args.verb == "call" else {}
    except ValueError as exc:
        raise InvalidInputError(f"the arguments are not JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise InvalidInputError("the arguments must be a JSON object")
    connection = McpConnection(args.name, server, secrets).start()
    try:
        if args.verb == "tools":
            for t in connection.tools():
                said = {"name": t.name, "description": t.description or "",
                        "input_schema": t.input_schema}  # fmt: skip
                print(json.dumps(said, ensure_ascii=False))
            return 0
        result = envelope(connection.call(args.tool, arguments, args.timeout))
    finally:
        connection.close()
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["ok"] else 1


def run(args: argparse.Namespace, secrets: Secrets | None = None) -> int:
    secrets = secrets or Secrets()
    if args.verb == "list":
        for name, server in load_servers().items():
            print(json.dumps({"name": name, **server.model_dump(exclude_defaults=True)}))
        return 0
    if args.verb == "add":
        return _add(args, secrets)
    if args.verb in ("tools", "call"):
        return _use(args, secrets)
    if args.verb == "remove":
        had = remove_server(args.name, secrets)
        print(f"MCP server {args.name} {'removed' if had else 'was not configured'}",
              file=sys.stderr)  # fmt: skip
        return 0
    if not secrets.saved:
        print(f"not imported: {secrets.problem}", file=sys.stderr)
        return 1
    found = import_servers(args.file, secrets)
    save_servers({**load_servers(), **found.servers})
    for line in found.moved:
        print(f"moved to the keyring: {line}", file=sys.stderr)
    for line in found.skipped:
        print(f"skipped: {line}", file=sys.stderr)
    print(f"imported {len(found.servers)} MCP servers: {', '.join(found.servers)}",
          file=sys.stderr)  # fmt: skip
    return 0


__all__ = ["add_arguments", "run"]
