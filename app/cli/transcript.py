"""`harmony-desk transcript convert|check`: OpenChatML 2.2 transcripts and their projections."""

from __future__ import annotations

import argparse
import sys

from app.fileio import write_output
from app.inputs import read_text_file

FORMATS = ["ocm", "json", "harmony-json", "harmony-tokens"]


def add_arguments(transcript: argparse.ArgumentParser) -> None:
    verbs = transcript.add_subparsers(dest="verb", required=True)
    convert = verbs.add_parser("convert", help="convert a transcript between formats")
    convert.add_argument("--to", required=True, choices=FORMATS, dest="to_format")
    convert.add_argument("--from", choices=FORMATS, dest="from_format", help="detected if left out")
    convert.add_argument("input", help="a file, or - for stdin")
    convert.add_argument("output", help="a file, or - for stdout")
    check = verbs.add_parser("check", help="list every problem in a transcript")
    check.add_argument("input", help="a file, or - for stdin")


def _read_input(name: str) -> str:
    return sys.stdin.read() if name == "-" else read_text_file(name)


def run(args: argparse.Namespace) -> int:
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
