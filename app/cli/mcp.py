"""`harmony-desk mcp list|add|remove|import|login|logout|test|tools|call|resources|read|prompts|
prompt`: the MCP servers the user configured, their sign-ins, and what they offer.

Guarantees: `add NAME -- COMMAND [ARGS…]` (`--env KEY=VALUE`, `--secret-env KEY`) and `add NAME
--url URL` (`--header K=V`, `--secret-header K`) write `mcp.json`; a secret's value is asked
for (not shown on a terminal; one line each from a pipe) and stored in the keyring only;
`import FILE` reads another app's file and says which values it moved to the keyring, which
servers it refused and why (a secret the keyring cannot hold, a name taken: never replaced);
`list` prints one JSON line per server (secrets by name only, anything secret-shaped redacted);
a server that would keep a secret in plain text is refused by `add`; exit 2 with the reason for
a bad name, value or file; exit 1 when the keyring cannot keep a secret (nothing is written
then); `tools NAME` prints one JSON line per tool (name, the function name the model calls it
by, description, input schema); `call NAME TOOL 'JSON'` prints the result's envelope as JSON
and exits 1 on the tool's own error, and ends by its `--timeout` whatever progress the server
reports; `test NAME` starts it and prints what it offers and how many prompt tokens its tools
add; `resources NAME` / `prompts NAME` print one JSON line each, and `read NAME URI` / `prompt
NAME PROMPT [--arg K=V]` print a resource's text or a prompt's messages. `add NAME --url URL
--oauth` is a server that needs a sign-in: `login NAME` opens the browser on its authorization
server (the address is printed too), waits for the loopback redirect and says "Signed in to
NAME" with the scopes granted, its tokens in the keyring only (`--scope` asks for more; a
client-credentials server signs in with no browser); `logout NAME` forgets them; the OAuth
client's options of `add` and the wider sign-in a server asks for mid-command are
`app/cli/mcp_signin.py`'s;
`list` and `test` say an OAuth server's `sign_in` state. A server that cannot start or answer,
or one that needs a sign-in first, is exit 2 with the reason (and its stderr).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from app.cli.mcp_signin import add_client_arguments, client_values, following, told
from app.domain.redact import redact_data
from app.errors import InvalidInputError
from app.harmony.renderer import tool_tokens
from app.secrets import Secrets
from app.tools.mcp.client import McpConnection
from app.tools.mcp.config import (
    McpServer,
    add_server,
    import_servers,
    load_servers,
    remove_server,
    save_servers,
)
from app.tools.mcp.results import envelope, prompt_messages, resource_text
from app.tools.mcp.tools import McpPool, function_name

USES = ("test", "tools", "call", "resources", "read", "prompts", "prompt")


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
    add.add_argument("--tools", metavar="TOOL[,TOOL...]", help="offer only these of its tools")
    add.add_argument(
        "--oauth", action="store_true", help="a remote server that signs in (then: mcp login NAME)"
    )
    add_client_arguments(add)
    add.add_argument(
        "--call-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds a call may go without a result or progress (default 60)",
    )
    add.add_argument(
        "server_command", nargs="*", metavar="COMMAND", help="after --: its program and arguments"
    )
    remove = verbs.add_parser("remove", help="forget a server and its secrets")
    remove.add_argument("name")
    login = verbs.add_parser("login", help="sign in to an OAuth server in the browser")
    login.add_argument("name")
    login.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for the browser (default 300)",
    )
    login.add_argument("--scope", metavar="SCOPES", help="ask for these scopes too")
    verbs.add_parser("logout", help="forget an OAuth server's sign-in").add_argument("name")
    verbs.add_parser("test", help="start a server: what it offers").add_argument("name")
    verbs.add_parser("tools", help="a server's tools, one JSON line each").add_argument("name")
    verbs.add_parser("resources", help="a server's resources, one JSON line each").add_argument(
        "name"
    )
    read = verbs.add_parser("read", help="a resource's text")
    read.add_argument("name")
    read.add_argument("uri")
    verbs.add_parser("prompts", help="a server's prompts, one JSON line each").add_argument("name")
    prompt = verbs.add_parser("prompt", help="a prompt's messages, one JSON line each")
    prompt.add_argument("name")
    prompt.add_argument("prompt")
    prompt.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE")
    call = verbs.add_parser("call", help="call a server's tool; its result as JSON")
    call.add_argument("name")
    call.add_argument("tool")
    call.add_argument("arguments", help="the arguments, a JSON object")
    call.add_argument(
        "--timeout", type=float, default=60.0, help="seconds in all, progress or not (default 60)"
    )
    imported = verbs.add_parser(
        "import",
        help="servers from Claude Desktop, Cursor, LM Studio"
        " or VS Code (secrets moved to the keyring)",
    )
    imported.add_argument("file", type=Path)
    for verb in USES:
        verbs.choices[verb].add_argument(
            "--yes", action="store_true", help="ask nothing: a wider sign-in is refused"
        )


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
    client, client_secrets = client_values(args)
    if (hidden or client_secrets) and not secrets.saved:
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
            timeout=args.call_timeout,
            enabled_tools=tuple(t.strip() for t in args.tools.split(",")) if args.tools else None,
            oauth=args.oauth,
            oauth_client=client,
        )
    except ValidationError as exc:
        raise InvalidInputError(f"the server is not valid: {exc.errors()[0]['msg']}") from None
    values = {name: _ask(name) for name in hidden}
    add_server(args.name, server, secrets, {**values, **client_secrets})
    then = f"; sign in with `harmony-desk mcp login {args.name}`" if args.oauth else ""
    print(f"MCP server {args.name} saved{then}", file=sys.stderr)
    return 0


def _login(args: argparse.Namespace, secrets: Secrets) -> int:
    from app.tools.mcp.oauth import login

    if not secrets.saved:
        print(f"not signed in: {secrets.problem}", file=sys.stderr)
        return 1
    server = McpPool(secrets=secrets).server(args.name)
    said = told(args.name)
    signed = login(args.name, server, secrets, timeout=args.timeout, told=said, scope=args.scope)
    print(signed.sentence(args.name), file=sys.stderr)
    return 0


def _sign_in(name: str, server: McpServer, secrets: Secrets) -> dict[str, str]:
    """`{"sign_in": state}` for an OAuth server, {} for another."""
    from app.tools.mcp.oauth import sign_in

    return {"sign_in": sign_in(name, secrets).state.value} if server.oauth else {}


def _arguments(text: str) -> dict[str, object]:
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(f"the arguments are not JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise InvalidInputError("the arguments must be a JSON object")
    return arguments


def _lines(rows: list[dict[str, object]]) -> int:
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    return 0


def _use(args: argparse.Namespace, secrets: Secrets) -> int:
    pool = McpPool(secrets=secrets)
    pool.server(args.name)  # a clear error for a name that is not configured
    arguments = _arguments(args.arguments) if args.verb == "call" else {}
    server = pool.server(args.name)
    try:
        return following(
            args.name,
            server,
            secrets,
            args.yes,
            lambda: _with(args, pool, pool.connection(args.name), arguments, secrets),
            lambda: pool.stop(args.name),
        )
    finally:
        pool.close()


def _with(
    args: argparse.Namespace,
    pool: McpPool,
    connection: McpConnection,
    arguments: dict[str, object],
    secrets: Secrets,
) -> int:
    if args.verb == "tools":
        return _lines(
            [
                {
                    "name": t.name,
                    "function": function_name(args.name, t.name),
                    "description": t.description or "",
                    "input_schema": t.input_schema,
                }
                for t in connection.tools()
            ]
        )
    if args.verb == "test":
        tools = pool.tools(args.name)
        said = {
            "name": args.name,
            "tools": [t.name for t in tools],
            "prompt_tokens": tool_tokens([t.description_for_model() for t in tools]),
            "resources": len(connection.resources()),
            "prompts": len(connection.prompts()),
            **_sign_in(args.name, connection.server, secrets),
        }
        return _lines([said])
    if args.verb == "resources":
        return _lines(
            [
                {
                    "uri": str(r.uri),
                    "name": r.name,
                    "description": r.description or "",
                    "mime_type": r.mime_type or "",
                }
                for r in connection.resources()
            ]
        )
    if args.verb == "read":
        print(resource_text(connection.read_resource(args.uri)))
        return 0
    if args.verb == "prompts":
        return _lines(
            [
                {
                    "name": p.name,
                    "description": p.description or "",
                    "arguments": [
                        {"name": a.name, "required": bool(a.required)} for a in p.arguments or ()
                    ],
                }
                for p in connection.prompts()
            ]
        )
    if args.verb == "prompt":
        got = connection.get_prompt(args.prompt, _pairs(args.arg, "--arg"))
        return _lines([{"role": r, "text": t} for r, t in prompt_messages(got)])
    result = envelope(connection.call(args.tool, arguments, args.timeout))
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["ok"] else 1


def run(args: argparse.Namespace, secrets: Secrets | None = None) -> int:
    secrets = secrets or Secrets()
    if args.verb == "list":
        for name, server in load_servers().items():
            shown = redact_data({"name": name, **server.model_dump(exclude_defaults=True)})
            print(json.dumps({**shown, **_sign_in(name, server, secrets)}))
        return 0
    if args.verb == "add":
        return _add(args, secrets)
    if args.verb == "login":
        return _login(args, secrets)
    if args.verb == "logout":
        from app.tools.mcp.oauth import logout

        had = logout(args.name, secrets)
        print(
            f"Signed out of {args.name}" if had else f"{args.name} was not signed in",
            file=sys.stderr,
        )
        return 0
    if args.verb in USES:
        return _use(args, secrets)
    if args.verb == "remove":
        had = remove_server(args.name, secrets)
        print(
            f"MCP server {args.name} {'removed' if had else 'was not configured'}", file=sys.stderr
        )
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
    print(f"imported {len(found.servers)} MCP servers: {', '.join(found.servers)}", file=sys.stderr)
    return 0


__all__ = ["add_arguments", "run"]
