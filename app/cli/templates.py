"""`harmony-desk templates list|show|check`: the chat template registry on the command line.

Guarantees: `list` prints one line per template — name, where it came from (built-in, or its
file), capability, context length and sampling — after any problem with the files in the
config folder's `templates/` (on stderr); `show NAME` prints the template as JSON: its layout
fields when it has one (LMDeploy's shape), its defaults and its source; `check FILE` validates
a template file without registering it: exit 0 and what it defines, or exit 2 and each field
that is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.errors import InvalidInputError
from app.templates.base import Capability
from app.templates.files import TemplateFileError, read_spec, templates_folder
from app.templates.registry import (
    folder_problems,
    get_template,
    layout_of,
    template_names,
    template_source,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="every template, with where it came from")
    show = verbs.add_parser("show", help="one template as JSON")
    show.add_argument("name")
    check = verbs.add_parser("check", help="validate a template file")
    check.add_argument("file", type=Path)


def _described(name: str) -> dict[str, object]:
    template = get_template(name)
    out: dict[str, object] = {"name": name, "source": template_source(name)}
    out["tool_calls"] = template.tool_calls  # the call format (None: the model gets no tools)
    out["reasoning_effort"] = template.takes_effort
    layout = template.layout()
    if layout is not None:
        out["layout"] = layout
    out["defaults"] = template.defaults.model_dump(mode="json")
    return out


def run(args: argparse.Namespace) -> int:
    for problem in folder_problems():
        print(f"template file not used: {problem}", file=sys.stderr)
    if args.verb == "list":
        for name in template_names():
            template = get_template(name)
            d = template.defaults
            print(
                f"{name:16} {template_source(name):12} {d.capability.value:10}"
                f" tools {template.tool_calls or '-':12}"
                f" ctx {d.session_len:<6} temperature {d.temperature} top_p {d.top_p}"
                f" top_k {d.top_k} repetition_penalty {d.repetition_penalty}"
                + (f" stop {list(d.stop_words)}" if d.stop_words else "")
            )
        print(f"(template files are read from {templates_folder()})", file=sys.stderr)
    elif args.verb == "show":
        print(json.dumps(_described(args.name), ensure_ascii=False, indent=1))
    else:
        try:
            spec = read_spec(args.file, layout_of)
        except TemplateFileError as exc:
            raise InvalidInputError(exc.message) from exc
        name = spec.model_name
        mine = template_source(name) == str(args.file)
        taken = name in template_names() and not mine
        kind = (spec.capability or Capability.CHAT).value
        said = f"{args.file}: a {kind} template {name!r}"
        said += f", extending {spec.base}" if spec.base else ""
        said += (
            f" — the name {name!r} is taken ({template_source(name)}): rename it" if taken else ""
        )
        print(said)
        return 2 if taken else 0
    return 0


__all__ = ["add_arguments", "run"]
