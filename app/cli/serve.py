"""`harmony-desk serve`: the loaded model as an OpenAI-compatible server, headless.

Guarantees: it binds to 127.0.0.1 unless told otherwise; bound to any other address it
requires a bearer token — kept in the keyring (`server.token`), made and shown once on first
use, never written to a file or a log — and refuses to start when the keyring cannot keep it;
the model loads before the server listens with `--parallel` sequences (the settings' by
default), and every request goes to the worker at once, which decodes that many side by side
and queues the rest in the order they came; the model's projector (the mmproj GGUF in its folder,
or `--projector FILE`) loads with it, and then the server takes images (`app/server/pictures.py`)
and says so in `/v1/models`; slow or idle connections are closed and web pages
of other origins refused (`app.server.listen`, `app.server.app`); Ctrl+C or SIGTERM stops it
and the model workers with it, which first write their prompt cache to disk.
Several models (`app.server.fleet`): `--model` is the default model, loaded first and kept; a
request naming another of `--models` (the library's by default, and any GGUF files listed)
loads it in a worker of its own within `--memory` (the memory free at start by default),
unloading the least recently used idle one to make room, and a model idle for
`--idle-unload` minutes is unloaded; `--pin` loads models at start and keeps them; `--alias`
maps names clients ask for (`claude-*`) to a model, before the settings' aliases. What it
chose (budget, aliases, models offered) is said on stderr at start.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import logging
import secrets
import signal
import sys

from app.cli.local_model import add_model_arguments, load_model
from app.cli.serve_embeddings import open_embedder
from app.domain.library import human_size
from app.engine.local.client import WorkerClient
from app.engine.local.memory import available_memory, estimate_memory, with_projector
from app.engine.local.serving import Models, Opened
from app.engine.local.tokenizer import ModelTokenizer
from app.errors import InvalidInputError
from app.secrets import Secrets
from app.server.aliases import Aliases
from app.server.claims import Resident
from app.server.fleet import Fleet
from app.server.library_models import LibraryModels, served_of
from app.server.options import LOOPBACK, ServeOptions

TOKEN_KEY = "server.token"
QUEUED_AT_MOST = 64  # clients' turns the worker holds at once (running or queued); more wait here


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--parallel",
        type=int,
        default=None,
        metavar="N",
        help="answers decoded at once, each with the whole context (default: the settings', 4)",
    )
    parser.add_argument(
        "--max-tokens", type=int, default=4096, help="the most a request may ask to generate"
    )
    parser.add_argument(
        "--reasoning-field",
        choices=["reasoning_content", "reasoning"],
        default="reasoning_content",
        help="where chat answers carry the reasoning (a request's `reasoning_format` wins)",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin allowed to call the server from a browser (none by default)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients may use besides this machine's addresses",
    )
    parser.add_argument(
        "--thinking-budget",
        type=int,
        default=None,
        help="gpt-oss with tools or JSON: at most this many tokens per reasoning message"
        " (a request's `thinking_budget` wins)",
    )
    parser.add_argument(
        "--require-token", action="store_true", help="ask for the token on loopback too"
    )
    parser.add_argument(
        "--embedding-model",
        default=None,
        metavar="PATH",
        help="an embedding GGUF for /v1/embeddings (default: the app's document embedding"
        " model, WordLlama)",
    )
    parser.add_argument(
        "--new-token", action="store_true", help="make a new token (the old one stops working)"
    )
    parser.add_argument(
        "--models",
        default="library",
        metavar="LIST",
        help="the other models a request may name, loaded when first asked for: 'library' (every"
        " model in the library, the default), 'none', or GGUF files, comma-separated (with"
        " 'library' among them for both)",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="MODEL",
        help="load this model at start too and keep it loaded",
    )
    parser.add_argument(
        "--alias",
        action="append",
        default=[],
        metavar="PATTERN=MODEL",
        help="a name clients ask for (a glob: 'claude-*') answered by MODEL (empty: the default"
        " model); tried before the settings' aliases",
    )
    parser.add_argument(
        "--idle-unload",
        type=float,
        default=None,
        metavar="MINUTES",
        help="unload a model loaded on request when idle this long (default: the settings', 15;"
        " 0 never)",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="summarise the older exchanges of a prompt past 80%% of the context (a request that"
        " names its own overflow policy, or truncation, keeps it); the summaries are reused by"
        " the requests that resend the conversation",
    )
    parser.add_argument(
        "--memory",
        type=float,
        default=None,
        metavar="GIB",
        help="memory the models may take together (default: what is free at start)",
    )


def server_token(fresh: bool, keyring: Secrets | None = None) -> str:
    """The server's bearer token from the keyring; a new one is made and shown once."""
    keyring = keyring or Secrets()
    token = None if fresh else keyring.get(TOKEN_KEY)
    if token is not None:
        return token
    if not keyring.saved:
        raise InvalidInputError(f"the server needs a token the keyring keeps: {keyring.problem}")
    token = secrets.token_urlsafe(32)
    keyring.set(TOKEN_KEY, token)
    print(f"The server's token (shown once; kept in the keyring): {token}", file=sys.stderr)
    return token


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from app.server.listen import server_config

    guarded = args.require_token or args.host not in LOOPBACK
    options = ServeOptions(
        host=args.host,
        port=args.port,
        token=server_token(args.new_token) if guarded else None,
        cors_origins=tuple(args.cors_origin),
        allowed_hosts=tuple(args.allow_host),
        max_tokens=args.max_tokens,
        reasoning_field=args.reasoning_field,
        thinking_budget=args.thinking_budget,
        compact=args.compact,
    )
    logging.getLogger("server").setLevel(logging.INFO)
    from app.settings import load_settings

    settings = load_settings()
    args.parallel = max(1, args.parallel or settings.parallel)
    aliases = Aliases.of((*args.alias, *settings.server_aliases))
    idle = settings.server_idle_minutes if args.idle_unload is None else args.idle_unload
    budget = int(args.memory * (1 << 30)) if args.memory else available_memory()
    # every client's turn goes to the worker at once: it decodes `parallel` of them together
    # and queues the rest in the order they came (`app/engine/worker/scheduler.py`)
    engine = cf.ThreadPoolExecutor(max_workers=QUEUED_AT_MOST, thread_name_prefix="engine")
    with WorkerClient() as client, open_embedder(args.embedding_model, args.threads) as embedder:
        loaded = load_model(client, args)
        opened = Opened(client, loaded, ModelTokenizer(client))  # one tokenizer per model
        served = served_of(opened, engine, embedder)
        listed = [m.strip() for m in args.models.split(",") if m.strip()]
        loader = LibraryModels(
            Models(args.threads, args.parallel, args.cache_ram),
            engine,
            library="library" in listed,
            files=[m for m in listed if m not in ("library", "none")],
        )
        fleet = Fleet(
            Resident(served, _footprint(opened, args.parallel), loaded.path),
            loader=loader,
            budget=budget,
            idle_s=idle * 60 or None,
            aliases=aliases,
            pins=args.pin,
        )
        server = uvicorn.Server(server_config(fleet, options))
        # uvicorn stops on SIGTERM as on Ctrl+C, then raises the signal again: let that unwind
        # as an exit, so the workers unload (their prompt caches reach the disk) before the end
        signal.signal(signal.SIGTERM, _terminated)
        where = f"http://{args.host}:{args.port}/v1"
        print(f"Serving {served.name} at {where} (Ctrl+C stops)", file=sys.stderr, flush=True)
        _say_fleet(fleet, idle)
        try:
            server.run()
        finally:
            engine.shutdown(wait=False, cancel_futures=True)
            fleet.close()
    return 0


def _footprint(opened: Opened, parallel: int) -> int:
    """The default model's estimate, as the fit check makes it for the others."""
    from app.gguf.info import read_model

    info = opened.info
    model = with_projector(read_model(info.path), info.projector or None)
    return estimate_memory(model, info.n_ctx, sequences=parallel).total


def _say_fleet(fleet: Fleet, idle_minutes: float) -> None:
    others = [o.name for o in fleet.offers() if o.name != fleet.default_name]
    budget = human_size(fleet.budget) if fleet.budget else "no limit"
    unload = f"after {idle_minutes:g} min idle" if idle_minutes else "never when idle"
    print(
        f"Other models load on request: {len(others)} (GET /v1/models lists them; memory for"
        f" all: {budget}; unloaded {unload}). Model names: {'; '.join(fleet.aliases.said())}.",
        file=sys.stderr,
        flush=True,
    )


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(0)


__all__ = ["TOKEN_KEY", "add_arguments", "run", "server_token"]
