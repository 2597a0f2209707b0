"""`harmony-desk connect CLIENT [--print] [--base-url URL] [--model NAME] [--ctx TOKENS] [--undo]`:
point a coding agent's own user-level configuration at the local server.

Guarantees: the key is the server's token when the keyring holds one (read, never made), else
a placeholder a keyless loopback server takes. The model and its context come from, in order:
`--ctx` (the context, as given); the server at `--base-url` when it answers and lists the model
loaded (`app.clients.served`: without `--model`, the model it serves first, so a server started
with `--ctx` or `--rope-scale` is described as it runs); else the model `serve` would load (its
file's stem, the name the server gives it) with the context `serve` would choose for it now.
Answers are capped at `serve`'s limit or a quarter of that context, whichever is less. The
files are merged, backed up, reported and undone by `app.clients.connecting`, the same code
the window's Serve page runs (its guarantees: nothing is written when a file cannot be read,
comments and layout are kept, `--undo` takes out only what connect set and keeps the backup);
what changed is printed key by key, with how to undo it, and no key is ever printed.
`--print` writes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.clients import CLIENTS, PLACEHOLDER_KEY, Target, connecting
from app.clients.served import served_model

DEFAULT_ROOT = "http://127.0.0.1:8080"
FALLBACK_CONTEXT = 4096  # a model known by name only: the app's own default context
MIN_CONTEXT = 256  # `--ctx` below this leaves no room for any client's prompt


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("client", choices=list(CLIENTS), help="the coding agent to configure")
    either = parser.add_mutually_exclusive_group()
    either.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="print the files as they would be written; write nothing",
    )
    parser.add_argument(
        "--base-url",
        default=DEFAULT_ROOT,
        metavar="URL",
        help=f"the server (default {DEFAULT_ROOT}); each client gets the path it wants",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="the model name clients ask for, or a GGUF file (default: the model `serve`"
        " loads); the server answers any name with its model",
    )
    parser.add_argument(
        "--ctx",
        type=_tokens,
        metavar="TOKENS",
        help="the context the server gives the model (default: what the running server at"
        " --base-url says, else what `serve` would load the model with)",
    )
    either.add_argument(
        "--undo",
        action="store_true",
        help="take out what connect set, putting back the values it replaced",
    )


def run(args: argparse.Namespace) -> int:
    env, home = os.environ, Path.home()
    if args.undo:
        report = connecting.undo(args.client, env, home)
        print(report.text)
        return 0
    target, facts = _target(args)
    if args.print_only:
        print(connecting.preview(args.client, target, env, home).text)
        print("Nothing was written (--print).", file=sys.stderr)
        return 0
    report = connecting.connect(args.client, target, env, home)
    print("\n".join([f"Connected {args.client} to Harmony Desk at {target.root}", *facts]))
    print(report.text)
    print(report.note)
    print(f"Undo: harmony-desk connect {args.client} --undo")
    return 0


def _target(args: argparse.Namespace) -> tuple[Target, list[str]]:
    """What the client is pointed at, and lines saying where each part came from."""
    from app.server.options import ServeOptions

    key, whose = _key()
    name, context, how = _sized(args, key)
    target = connecting.target_for(args.base_url, key, name, context, ServeOptions().max_tokens)
    facts = [
        f"  model: {name} (context {context:,} tokens, {how};"
        f" answers up to {target.max_tokens:,} tokens)",
        f"  key: {whose}",
    ]
    return target, facts


def _sized(args: argparse.Namespace, key: str) -> tuple[str, int, str]:
    """The model's name, its context and where that came from (the module guarantees' order)."""
    name, path = _model(args.model)
    root = connecting.root_of(args.base_url)
    served = served_model(root, key, name if args.model else None)
    if served is not None:
        name = served.name
    if args.ctx is not None:
        return name, args.ctx, "as given with --ctx"
    if served is not None:
        return name, served.context, f"as the server at {root} serves it now"
    return name, *_context(path)


def _tokens(text: str) -> int:
    """`--ctx`: a whole number of tokens, at least `MIN_CONTEXT`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens") from None
    if value < MIN_CONTEXT:
        raise argparse.ArgumentTypeError(f"a context of {value} tokens is under {MIN_CONTEXT}")
    return value


def _key() -> tuple[str, str]:
    """The server's token if the keyring holds one (never made here), else the placeholder."""
    from app.cli.serve import TOKEN_KEY
    from app.secrets import Secrets

    keyring = Secrets()
    token = keyring.get(TOKEN_KEY)
    if token:
        return token, "the server's token, from the keyring"
    where = "no usable keyring here" if keyring.problem else "the keyring holds no server token"
    return PLACEHOLDER_KEY, (
        f'"{PLACEHOLDER_KEY}" ({where}: a server on loopback without --require-token takes any'
        " key; once `serve --require-token` has made a token, connect again to use it)"
    )


def _model(given: str | None) -> tuple[str, Path | None]:
    """The model's name as the server gives it (a file's stem), and its file where known."""
    from app.errors import InvalidInputError

    if given is None or given == "default":
        from app.library.bundled import CHAT_FILE, assembled_default_model
        from app.library.folders import startup_model
        from app.settings import load_settings

        chosen = startup_model(load_settings())
        path = Path(chosen) if chosen else assembled_default_model() or Path(CHAT_FILE)
        return path.stem, path if path.is_file() else None
    path = Path(given).expanduser()
    if path.is_file():
        return path.stem, path
    if path.suffix.lower() == ".gguf":
        raise InvalidInputError(f"the model {given} is not a file")
    return given, None


def _context(path: Path | None) -> tuple[int, str]:
    """The context `serve` would load `path` with now (its trained one, halved to fit)."""
    if path is None:
        return FALLBACK_CONTEXT, "assumed: the model's file is not known here"
    from app.engine.local.memory import context_that_fits
    from app.errors import HarmonyDeskError
    from app.gguf.info import read_model
    from app.settings import load_settings

    try:
        model = read_model(path)
    except HarmonyDeskError:
        return FALLBACK_CONTEXT, f"assumed: {path.name} could not be read"
    parallel = max(1, load_settings().parallel)
    n_ctx, _ = context_that_fits(model, model.context_length, sequences=parallel)
    return n_ctx, f"as serve would load it now for {parallel} answers at once"


__all__ = ["add_arguments", "run"]
