"""Command-line entry point: `harmony-desk` (the app) and its headless subcommands.

Subcommands never need a display. `harmony render` and `harmony parse` read JSON Lines on
stdin and write one JSON line per input line (see README, "Command-line contract").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial

from app import __version__
from app.domain.messages import Role
from app.domain.terminal import protect_terminal
from app.errors import HarmonyDeskError
from app.fileio import write_output
from app.inputs import read_text_file
from app.startup import configure_logging, install_crash_handler


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harmony-desk", description="Harmony Desk")
    parser.add_argument("--version", action="version", version=f"harmony-desk {__version__}")
    parser.add_argument("--model", help="the window: a GGUF file to load instead of the default")
    parser.add_argument(
        "--screenshot", metavar="PATH", help="render a sample conversation to a PNG and exit"
    )
    parser.add_argument(
        "--self-test", action="store_true", help="check this installation (offline) and exit"
    )
    commands = parser.add_subparsers(dest="command")
    harmony = commands.add_parser("harmony", help="render and parse the Harmony format")
    verbs = harmony.add_subparsers(dest="verb", required=True)
    render = verbs.add_parser("render", help="conversations (JSON Lines) to token ids")
    render.add_argument("--mode", choices=["completion", "plain", "training"], default="completion")
    render.add_argument("--next-role", choices=[r.value for r in Role], default="assistant")
    render.add_argument("--keep-analysis", action="store_true")
    parse = verbs.add_parser("parse", help="token ids (JSON Lines) to messages")
    parse.add_argument("--role", default="assistant", help="role of the first message, or 'null'")
    parse.add_argument("--strict", action="store_true", help="the reference parser's rules")
    from app.headless_chat import add_arguments

    add_arguments(commands.add_parser("chat", help="chat in the terminal (headless)"))
    from app import history_cli, tools_cli

    history_cli.add_arguments(commands.add_parser("history", help="saved conversations"))

    tools_cli.add_arguments(commands.add_parser("tools", help="tool plugins, audit log, approvals"))
    from app import replay

    replay.add_arguments(
        commands.add_parser("replay", help="replay model output through a frontend's turn path")
    )
    from app import endpoints_cli

    endpoints_cli.add_endpoint_arguments(
        commands.add_parser("endpoints", help="remote OpenAI-compatible endpoints")
    )
    endpoints_cli.add_key_arguments(commands.add_parser("keys", help="API keys in the OS keyring"))
    from app import library_cli

    library_cli.add_arguments(commands.add_parser("models", help="the model library"))
    transcript = commands.add_parser("transcript", help="OpenChatML 2.2 transcripts")
    tverbs = transcript.add_subparsers(dest="verb", required=True)
    convert = tverbs.add_parser("convert", help="convert a transcript between formats")
    formats = ["ocm", "json", "harmony-json", "harmony-tokens"]
    convert.add_argument("--to", required=True, choices=formats, dest="to_format")
    convert.add_argument("--from", choices=formats, dest="from_format", help="detected if left out")
    convert.add_argument("input", help="a file, or - for stdin")
    convert.add_argument("output", help="a file, or - for stdout")
    check = tverbs.add_parser("check", help="list every problem in a transcript")
    check.add_argument("input", help="a file, or - for stdin")
    return parser


def _read_input(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    return read_text_file(name)


def _transcript(args: argparse.Namespace) -> int:
    from app.harmony.ocm import convert

    text = _read_input(args.input)
    if args.verb == "check":
        problems = convert.problems(text)
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    transcript = convert.load(text, args.from_format)
    write_output(args.output, convert.dump(transcript, args.to_format))
    for problem in transcript.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def _harmony(args: argparse.Namespace) -> int:
    from app.harmony import jsonl
    from app.harmony.encoding import load_encoding
    from app.harmony.renderer import Renderer, RenderMode

    if args.verb == "render":
        defaults = jsonl.RenderDefaults(
            mode=RenderMode(args.mode),
            next_role=Role(args.next_role),
            keep_analysis=args.keep_analysis,
        )
        handle = partial(jsonl.render_line, defaults=defaults, renderer=Renderer())
    else:
        role = None if args.role in ("null", "none", "") else Role(args.role)
        pdefaults = jsonl.ParseDefaults(role=role, strict=args.strict)
        handle = partial(jsonl.parse_line, defaults=pdefaults, encoding=load_encoding())
    jsonl.run_lines(sys.stdin, handle, sys.stdout)
    return 0


def _has_display() -> bool:
    import os

    if sys.platform != "linux" or os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _app(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The app without a subcommand: the window (the terminal chat where there is no display)."""
    if args.self_test:
        from app import self_test

        return self_test.main()
    if args.screenshot:
        from app.ui.app import screenshot

        return screenshot(args.screenshot)
    if _has_display():
        from app.ui.app import crash_dialog, run_window

        install_crash_handler(crash_dialog)  # the window's crash policy: log, then a dialog
        return run_window(args.model)
    from app.headless_chat import run_chat

    print(
        "Harmony Desk: no display here; starting the terminal chat on the bundled default model"
        " (Gemma 3 270M, a base model: it continues your text).\n"
        "Type a message and press Enter; Ctrl+D quits. `harmony-desk --help` lists the commands.",
        file=sys.stderr,
    )
    return run_chat(parser.parse_args(["chat"]))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    protect_terminal()  # model, server and imported text never drive the terminal
    configure_logging()
    install_crash_handler(lambda text: print(f"harmony-desk: {text}", file=sys.stderr))
    parser = _build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "history" and args.verb == "export":
        args.target += extra  # `history export ID --format md OUT`: positionals around an option
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "harmony":
            return _harmony(args)
        if args.command == "transcript":
            return _transcript(args)
        if args.command == "history":
            from app import history_cli

            return history_cli.run(args)
        if args.command == "tools":
            from app import tools_cli

            return tools_cli.run(args)
        if args.command in ("endpoints", "keys"):
            from app import endpoints_cli

            if args.command == "keys":
                return endpoints_cli.run_keys(args)
            return endpoints_cli.run_endpoints(args)
        if args.command == "models":
            from app import library_cli

            return library_cli.run(args)
        if args.command == "replay":
            from app import replay

            return replay.run(args)
        if args.command == "chat":
            from app.headless_chat import run_chat

            return run_chat(args)
        return _app(parser, args)
    except HarmonyDeskError as exc:
        print(f"harmony-desk: {exc.code.value} {exc.message}", file=sys.stderr)
        return 2
