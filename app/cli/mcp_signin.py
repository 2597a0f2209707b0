"""The OAuth side of `harmony-desk mcp`: who the app is to a server's authorization server
(`add … --oauth --client-id ID --token-auth basic|post|private_key_jwt|none
[--client-secret-stdin | --private-key FILE] [--client-metadata-url URL] [--grant
client_credentials --issuer URL] [--scope S]`), `login`, and the wider sign-in a server asks
for in the middle of a command.

Guarantees: a client secret is read from stdin (without echo on a terminal) and a private key
from its file (checked to be a PEM private key the app can sign with), and either goes to the
keyring only — `mcp.json` keeps the client id, the method, the metadata URL, the grant, the
issuer and the scope; an option that needs another (a secret for basic/post, a key for
private_key_jwt, a client id for either) is refused with a sentence before anything is written.
When a server refuses a request for a wider scope (a step-up), the command says which scopes it
asks for and asks "Sign in again in the browser? [y/N]" (one line from stdin: a terminal or a
pipe; anything but y/yes, or the end of input, declines); on yes it signs in for them (the
earlier sign-in kept until the new one arrives) and makes the request again, at most
`MAX_STEP_UPS` times; declined, it ends with the server's sentence; a `--yes` run asks nothing
and refuses a wider sign-in with a sentence that says how to give it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from app.errors import InvalidInputError
from app.secrets import Secrets
from app.tools.mcp.client import McpError
from app.tools.mcp.config import McpServer
from app.tools.mcp.oauth_client import PRIVATE_KEY, SECRET, OAuthClient, signing_algorithm
from app.tools.mcp.oauth_state import shown

T = TypeVar("T")
KEY_BYTES = 64 * 1024  # a private key file larger than this is not one


def add_client_arguments(add: argparse.ArgumentParser) -> None:
    """`mcp add`'s options for the OAuth client (see the module guarantees)."""
    add.add_argument("--client-id", metavar="ID", help="a client id the server's owner issued")
    add.add_argument(
        "--token-auth",
        choices=("none", "basic", "post", "private_key_jwt"),
        help="how the client proves itself at the token endpoint (default: none)",
    )
    given = add.add_mutually_exclusive_group()
    given.add_argument(
        "--client-secret-stdin",
        action="store_true",
        help="read the client secret from stdin (kept in the keyring)",
    )
    given.add_argument(
        "--private-key",
        type=Path,
        metavar="FILE",
        help="a PEM private key for private_key_jwt (kept in the keyring)",
    )
    add.add_argument(
        "--client-metadata-url",
        metavar="URL",
        help="an https Client ID Metadata Document, used where the server supports it",
    )
    add.add_argument(
        "--grant",
        choices=("authorization_code", "client_credentials"),
        help="client_credentials: a server that needs no person (with --issuer)",
    )
    add.add_argument("--issuer", metavar="URL", help="the authorization server of the client id")
    add.add_argument("--scope", metavar="SCOPES", help="scopes to ask for at every sign-in")


def _client(args: argparse.Namespace) -> OAuthClient | None:
    fields = {
        "client_id": args.client_id,
        "token_auth": args.token_auth,
        "metadata_url": args.client_metadata_url,
        "grant": args.grant,
        "issuer": args.issuer,
        "scope": args.scope,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    if not given:
        return None
    if not args.oauth:
        raise InvalidInputError("the OAuth client options are for a server added with --oauth")
    try:
        return OAuthClient(**given)
    except ValidationError as exc:
        raise InvalidInputError(f"the OAuth client is not valid: {_first(exc)}") from None


def _first(exc: ValidationError) -> str:
    return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")


def _secret() -> str:
    if sys.stdin.isatty():
        return getpass.getpass("client secret (not shown): ")
    return sys.stdin.readline().rstrip("\n")


def _key(path: Path) -> str:
    try:
        with path.open("rb") as file:
            data = file.read(KEY_BYTES + 1)
    except OSError as exc:
        raise InvalidInputError(f"{path} cannot be read ({exc.strerror})") from None
    try:
        text = data.decode("ascii")
        if len(data) > KEY_BYTES:
            raise ValueError("too large for a private key")
        signing_algorithm(text)
    except ValueError as exc:
        raise InvalidInputError(f"{path} is not a usable private key: {exc}") from None
    return text


def client_values(args: argparse.Namespace) -> tuple[OAuthClient | None, dict[str, str]]:
    """The OAuth client of `mcp add` and its secret or key, by keyring entry name."""
    client = _client(args)
    if client is None:
        if args.client_secret_stdin or args.private_key:
            raise InvalidInputError("a client secret or key needs --oauth and --client-id")
        return None, {}
    if args.client_secret_stdin and client.entry != SECRET:
        raise InvalidInputError("--client-secret-stdin is for --token-auth basic or post")
    if args.private_key is not None and client.entry != PRIVATE_KEY:
        raise InvalidInputError("--private-key is for --token-auth private_key_jwt")
    if client.entry == SECRET and not args.client_secret_stdin:
        raise InvalidInputError(f"--token-auth {client.token_auth} needs --client-secret-stdin")
    if client.entry == PRIVATE_KEY and args.private_key is None:
        raise InvalidInputError("--token-auth private_key_jwt needs --private-key FILE")
    if client.entry == SECRET:
        return client, {SECRET: _secret()}
    if client.entry == PRIVATE_KEY:
        return client, {PRIVATE_KEY: _key(args.private_key)}
    return client, {}


def _agrees(name: str, scope: str) -> bool:
    print(
        f"{name} asks for a wider sign-in (scopes: {shown(scope)}) to go on."
        " Sign in again in the browser? [y/N] ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def following(
    name: str,
    server: McpServer,
    secrets: Secrets,
    yes: bool,
    work: Callable[[], T],
    again: Callable[[], None],
) -> T:
    """`work()`, with a wider sign-in when the server asks for one and the person agrees
    (`again` drops the connection that was refused); see the module guarantees."""
    from app.tools.mcp.oauth import WiderSignIn, login
    from app.tools.mcp.oauth_state import MAX_STEP_UPS

    for _ in range(MAX_STEP_UPS):
        try:
            return work()
        except McpError as exc:
            wider = exc.sign_in
            if not isinstance(wider, WiderSignIn):
                raise
            if yes:
                raise McpError(
                    f"{exc.message} A --yes run asks nothing: sign in for those scopes with"
                    f" `harmony-desk mcp login {name}`, then run it again.",
                    sign_in=wider,
                ) from None
            if not _agrees(name, wider.scope):
                raise
        signed = login(name, server, secrets, told=told(name), scope=wider.scope)
        print(signed.sentence(name), file=sys.stderr)
        again()
    return work()


def told(name: str) -> Callable[[str], None]:
    def say(url: str) -> None:
        print(
            f"Opening the browser to sign in to {name}; if it does not open, visit:\n{url}",
            file=sys.stderr,
        )

    return say


__all__ = ["add_client_arguments", "client_values", "following", "told"]
