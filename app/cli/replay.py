"""`harmony-desk replay`: model output replayed through the real turn path of a frontend.

Each input line (JSON) is one generation: `{"tokens": [...]}` (ids, as a local model gives
them), or `{"text": "..."}` / `{"chunks": ["...", ...]}` (Harmony markup as a server streams
it). `--via tokens` feeds ids to a local session (a scripted worker), `--via remote-text` streams
the text from a scripted OpenAI-compatible server to a remote session; `--frontend terminal`
runs the terminal chat's path, `--frontend window` the window's (a real `ChatController` and
`MainWindow`, offscreen). One JSON line comes out per input line:

    {"shown": [{"lane": "answer|preamble|tool_call|notice", "text": "...", "recipient": ...}],
     "hidden": {"analysis": "..."}, "errors": [{"code": ..., "severity": ...}], "stop": ...}

`--template NAME|FILE|FILE.jinja` instead reads each line (`{"text": ..., "tools": [...]}`)
through that plain-text template's parser, calls included (`app/cli/replay_template.py`).

Guarantee: `shown` is what that frontend showed — for the window, read back from the painted
transcript — so the same output must give the same `shown` on every frontend and both paths
(both build their sessions and their lines with `app/cli/replay_source.py`). Qt is imported
only for `--frontend window`.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

from app.cli.replay_source import USER_TEXT, Source, result_of, session_for, source_of
from app.cli.terminal_reply import TerminalReply
from app.domain.history import Reply
from app.domain.messages import user_message
from app.engine.turn.run import TurnRequest, run_turn
from app.harmony import encoding as enc
from app.harmony.jsonl import run_lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frontend", choices=["window", "terminal"], default="terminal")
    parser.add_argument("--via", choices=["tokens", "remote-text"], default="tokens")
    parser.add_argument("--role", choices=["assistant"], default="assistant")
    parser.add_argument(
        "--template",
        default=None,
        help="read text through this template's parser: a name, a template file, or a .jinja",
    )


def replay_terminal(source: Source, via: str) -> dict[str, Any]:
    """Through the terminal chat's path: its printer and its reply builder."""
    printer = TerminalReply(False, io.StringIO(), io.StringIO())
    builder = printer.begin(Reply())
    for event in run_turn(session_for(source, via), TurnRequest(message=user_message(USER_TEXT))):
        printer(event)
    result = result_of(builder)
    result["stdout"] = printer.out.getvalue()  # type: ignore[attr-defined]
    return result


def replay_window(source: Source, via: str) -> dict[str, Any]:
    """Through the window: a real controller and main window, offscreen, painted."""
    from app.cli.replay_window import run_in_window  # deferred: Qt only for --frontend window

    return run_in_window(source, via)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "template", None):
        from app.cli.replay_template import replay_text, template_named

        template = template_named(args.template)
        run_lines(sys.stdin, lambda obj: replay_text(template, obj), sys.stdout)
        return 0
    encoding = enc.load_encoding()
    if args.frontend == "window":
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    frontend = replay_window if args.frontend == "window" else replay_terminal

    def handle(obj: Any) -> dict[str, Any]:
        return frontend(source_of(obj, encoding), args.via)

    run_lines(sys.stdin, handle, sys.stdout)
    return 0


__all__ = ["add_arguments", "replay_terminal", "replay_window", "run"]
