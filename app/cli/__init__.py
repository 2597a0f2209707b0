"""Command-line entry point: `harmony-desk` (the app) and its headless subcommands.

One module per command group in this package (`GROUPS`), each with `add_arguments` and `run`;
the terminal chat's view of a reply (`terminal_reply`) and its history checkpoints
(`checkpoints`) live here too. Subcommands never need a display; `harmony render|parse` read
JSON Lines on stdin and write one JSON line per input line (docs/cli.md).

Guarantees: the parser imports only the chosen subcommand's module — the top level is parsed
first (`_command`), then that one command's arguments are added — so starting the window (no
subcommand) imports none of them, and `harmony-desk --help` lists every command from `GROUPS`
alone; `harmony-desk COMMAND --help` shows that command's full help.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import textwrap
from collections.abc import Sequence

from app import __version__
from app.domain.terminal import protect_terminal
from app.errors import HarmonyDeskError
from app.startup import configure_logging, install_crash_handler

# command → (module in app/cli/, help); each module has `add_arguments(parser)` and `run(args)`
GROUPS = {
    "harmony": ("harmony", "render and parse the Harmony format"),
    "transcript": ("transcript", "OpenChatML 2.2 transcripts"),
    "chat": ("chat", "chat in the terminal (headless)"),
    "history": ("history", "saved conversations"),
    "tools": ("tools", "tool plugins, audit log, approvals"),
    "replay": ("replay", "replay model output through a frontend's turn path"),
    "endpoints": ("endpoints", "remote OpenAI-compatible endpoints"),
    "keys": ("keys", "API keys in the OS keyring"),
    "models": ("models", "the model library"),
    "mcp": ("mcp", "MCP servers: configuration and secrets"),
    "serve": ("serve", "an OpenAI-compatible server for the loaded model"),
    "connect": ("connect", "point a coding agent's configuration at the server"),
    "documents": ("documents", "the documents library: index and search your files"),
    "templates": ("templates", "chat templates: the registry and template files"),
    "cache": ("cache", "KV snapshots of conversations, kept on disk"),
}


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with every command listed and only `command`'s arguments (its module
    imported); the others are bare, without `--help`, so a first pass can find the command."""
    parser = argparse.ArgumentParser(prog="harmony-desk", description="Harmony Desk")
    parser.add_argument("--version", action="version", version=f"harmony-desk {__version__}")
    parser.add_argument("--model", help="the window: a GGUF file to load instead of the default")
    parser.add_argument(
        "--screenshot", metavar="PATH", help="render a sample conversation to a PNG and exit"
    )
    parser.add_argument(
        "--theme", choices=["light", "dark"], help="with --screenshot: the theme to render in"
    )
    parser.add_argument(
        "--view",
        choices=["sample", "empty", "narrow"],
        default="sample",
        help="with --screenshot: the sample conversation, an empty chat, or a 640x480 window",
    )
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="with --screenshot: the scripted sample, not a real answer of the bundled model",
    )
    parser.add_argument(
        "--self-test", action="store_true", help="check this installation (offline) and exit"
    )
    commands = parser.add_subparsers(dest="command")
    for name, (module, help_text) in GROUPS.items():
        sub = commands.add_parser(name, help=help_text, add_help=name == command)
        if name == command:
            importlib.import_module(f"app.cli.{module}").add_arguments(sub)
    return parser


def _command(words: Sequence[str]) -> str | None:
    """The subcommand `words` name, None for the window; the top level's own `--help`,
    `--version` and errors end the process here, as they always did."""
    found: str | None = _build_parser().parse_known_args(words)[0].command
    return found


def _has_display() -> bool:
    import os

    if sys.platform != "linux" or os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _app(args: argparse.Namespace) -> int:
    """The app without a subcommand: the window (the terminal chat where there is no display)."""
    if args.self_test:
        from app import self_test

        return self_test.main()
    if args.screenshot:
        from app.ui.screenshot import screenshot

        return screenshot(args.screenshot, args.theme, args.view, args.scripted)
    if _has_display():
        from app.ui.app import crash_dialog, run_window

        install_crash_handler(crash_dialog)  # the window's crash policy: log, then a dialog
        return run_window(args.model)
    from app.cli.chat import run_chat

    print(
        "Harmony Desk: no display here; starting the terminal chat on the bundled default model"
        " (SmolLM2-135M-Instruct, a very small chat model).\n"
        "Type a message and press Enter; Ctrl+D quits. `harmony-desk --help` lists the commands.",
        file=sys.stderr,
    )
    return run_chat(_build_parser("chat").parse_args(["chat"]))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["--mcp-guard"]:  # a bundle runs its MCP servers' guard as itself
        from app.tools.mcp.guard import main as guard

        return guard(words[1:])
    os.umask(0o077)  # whatever the app creates is the user's alone: files 0600, folders 0700
    protect_terminal()  # model, server and imported text never drive the terminal
    install_crash_handler(lambda text: print(f"harmony-desk: {text}", file=sys.stderr))
    parser = _build_parser(_command(words))
    args, extra = parser.parse_known_args(words)
    if not args.self_test:  # the self-test leaves the user's folders as it found them
        configure_logging()
    if extra and args.command == "history" and args.verb == "export":
        args.target += extra  # `history export ID --format md OUT`: positionals around an option
    elif extra and args.command == "mcp" and args.verb == "add" and extra[0] == "--":
        args.server_command += extra  # `mcp add NAME [options] -- COMMAND ARGS...`
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command in GROUPS:
            module = importlib.import_module(f"app.cli.{GROUPS[args.command][0]}")
            status: int = module.run(args)
            return status
        return _app(args)
    except HarmonyDeskError as exc:
        print(f"harmony-desk: {exc.code.value} {exc.message}", file=sys.stderr)
        if exc.details:  # the technical facts behind the sentence, indented under it
            print(textwrap.indent(exc.details, "  "), file=sys.stderr)
        return 2
