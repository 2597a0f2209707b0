"""`harmony-desk endpoints add|list|test|remove` and `harmony-desk keys set|delete`.

Guarantees: endpoints are kept in the settings file (no key there); a key is read from a prompt
that does not echo, or from standard input when it is not a terminal, never from an argument,
and goes to the OS keyring only (`app.secrets`); without a usable keyring the command says so
and fails rather than pretend the key was kept; `list` shows every endpoint redacted (an old
settings file may still hold a key in a URL); `add --context N` sets the model's context on the
endpoint (else the server's model list is asked when the endpoint is first used); `test` lists
the server's models (or sends a one-token request), says the context the app will use and where
it comes from (set, said by the server, or assumed), and says plainly what went wrong.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from pydantic import ValidationError

from app.domain.endpoint import Endpoint
from app.domain.redact import redact
from app.errors import InvalidInputError, validation_problems
from app.secrets import MissingKey, Secrets
from app.settings import Settings, load_settings, save_settings
from app.templates.calls.formats import FORMATS


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="add or replace an endpoint")
    add.add_argument("name")
    add.add_argument("--base-url", required=True, help="e.g. https://HOST/serving-endpoints")
    add.add_argument("--model", required=True, help="the served model or endpoint name")
    add.add_argument("--key-name", help="the keyring entry of its API key (none: no key)")
    add.add_argument("--temperature", type=float)
    add.add_argument("--top-p", type=float)
    add.add_argument("--top-k", type=int)
    add.add_argument("--max-tokens", type=int)
    add.add_argument(
        "--context",
        type=int,
        metavar="N",
        help="the model's context on this endpoint, in tokens (default: what its server says"
        " when asked, else 8,192)",
    )
    add.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    add.add_argument("--retries", type=int, default=3)
    add.add_argument(
        "--tool-calls",
        choices=sorted(FORMATS),
        help="the call format the model writes, for a server that passes calls through as text",
    )
    add.add_argument(
        "--text-calls",
        action="store_true",
        help="read tool calls from Harmony markup in the answer's text, for a server that passes"
        " gpt-oss output through unparsed (default: calls come only from the API's tool_calls)",
    )
    verbs.add_parser("list", help="the configured endpoints")
    test = verbs.add_parser("test", help="list the models, or send a one-token request")
    test.add_argument("name")
    remove = verbs.add_parser("remove", help="forget an endpoint (its key stays)")
    remove.add_argument("name")


def add_key_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    put = verbs.add_parser("set", help="store a key (read from a prompt or standard input)")
    put.add_argument("name")
    delete = verbs.add_parser("delete", help="remove a key from the keyring")
    delete.add_argument("name")


def _endpoint(settings: Settings, name: str) -> Endpoint:
    found = settings.endpoint(name)
    if found is None:
        known = ", ".join(e.name for e in settings.endpoints) or "none yet"
        raise InvalidInputError(f"no endpoint {name!r} (configured: {known})")
    return found


def run_endpoints(args: argparse.Namespace, secrets: Secrets | None = None) -> int:
    settings = load_settings()
    if args.verb == "add":
        try:
            endpoint = Endpoint(
                name=args.name,
                base_url=args.base_url.rstrip("/"),
                model=args.model,
                key_name=args.key_name,
                temperature=args.temperature,
                top_p=args.top_p,
                top_k=args.top_k,
                max_tokens=args.max_tokens,
                timeout_s=args.timeout,
                retries=args.retries,
                tool_calls=args.tool_calls,
                text_calls=args.text_calls,
                context=args.context,
            )
        except ValidationError as exc:
            problems = validation_problems(exc)
            raise InvalidInputError(f"the endpoint is not valid: {problems}") from None
        save_settings(settings.with_endpoint(endpoint))
        hint = f"; store its key with `harmony-desk keys set {endpoint.key_name}`"
        print(f"endpoint {endpoint.name} saved{hint if endpoint.key_name else ''}", file=sys.stderr)
        return 0
    if args.verb == "list":
        secrets = secrets or Secrets()
        for e in settings.endpoints:
            key = "no key" if e.key_name is None else f"key {e.key_name}"
            if e.key_name is not None and secrets.get(e.key_name) is None:
                key += " (not set)"
            context = f"  context {e.context:,}" if e.context is not None else ""
            calls = "  calls from text" if e.text_calls else ""
            print(redact(f"{e.name}  {e.base_url}  {e.model}  {key}{context}{calls}"))
        return 0
    endpoint = _endpoint(settings, args.name)
    if args.verb == "remove":
        save_settings(settings.without_endpoint(endpoint.name))
        print(f"endpoint {endpoint.name} removed", file=sys.stderr)
        return 0
    return _test(endpoint, secrets or Secrets())


def _test(endpoint: Endpoint, secrets: Secrets) -> int:
    from app.engine.remote.session import check_connection

    try:
        key = secrets.key_for(endpoint)
    except MissingKey as exc:
        print(exc.message, file=sys.stderr)
        return 1
    ok, report = check_connection(endpoint, key)
    print(report, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def run_keys(args: argparse.Namespace, secrets: Secrets | None = None) -> int:
    secrets = secrets or Secrets()
    if args.verb == "delete":
        had = secrets.delete(args.name)
        print(f"key {args.name} {'deleted' if had else 'was not set'}", file=sys.stderr)
        return 0
    if not secrets.saved:
        print(f"not stored: {secrets.problem}", file=sys.stderr)
        return 1
    if sys.stdin.isatty():
        key = getpass.getpass(f"API key for {args.name} (not shown): ")
    else:
        key = sys.stdin.readline().strip()
    secrets.set(args.name, key)
    if not secrets.saved:  # the keyring failed while storing it
        print(f"not stored: {secrets.problem}", file=sys.stderr)
        return 1
    print(f"key {args.name} stored in the keyring", file=sys.stderr)
    return 0


__all__ = ["add_endpoint_arguments", "add_key_arguments", "run_endpoints", "run_keys"]


add_arguments = add_endpoint_arguments
run = run_endpoints
