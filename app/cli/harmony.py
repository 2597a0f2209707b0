"""`harmony-desk harmony render|parse`: the Harmony format on JSON Lines (one line out per line
in; a bad line is an error line and the run goes on; see docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from functools import partial

from app.domain.messages import Role


def add_arguments(harmony: argparse.ArgumentParser) -> None:
    verbs = harmony.add_subparsers(dest="verb", required=True)
    render = verbs.add_parser("render", help="conversations (JSON Lines) to token ids")
    render.add_argument("--mode", choices=["completion", "plain", "training"], default="completion")
    render.add_argument("--next-role", choices=[r.value for r in Role], default="assistant")
    render.add_argument("--keep-analysis", action="store_true")
    parse = verbs.add_parser("parse", help="token ids (JSON Lines) to messages")
    parse.add_argument("--role", default="assistant", help="role of the first message, or 'null'")
    parse.add_argument("--strict", action="store_true", help="the reference parser's rules")


def run(args: argparse.Namespace) -> int:
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
