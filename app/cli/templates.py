"""`harmony-desk templates list|show|check`: the chat template registry on the command line.

Guarantees: `list` prints one line per template — name, where it came from (built-in, or its
file), capability, context length and sampling — after any problem with the files in the
config folder's `templates/` (on stderr); `show NAME` prints the template as JSON: its layout
fields when it has one (LMDeploy's shape), its defaults, its source and `call_format`, one line
on how it reads tool calls — `format: NAME` for a per-family format, `learned: markers …,
arguments …, confidence …` for a format learned from a chat template, `no tool-call format:
WHY` when there is none — and beside it one line on how it writes reasoning (`reasoning`: a chat
template's markup derived from its own renderings, `ReasoningMarkup.describe()`; a family's think
tags; Harmony's analysis channel; `no reasoning markup: WHY`). `show FILE.jinja` shows a GGUF
chat template read from a file (as a model carrying it gets it; gpt-oss's own is the `harmony`
template), and `--learned` derives its format from the template alone, as if no per-family
format existed. `check FILE`
validates a template file without registering it: exit 0 and what it defines, or exit 2 and
each field that is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.errors import InvalidInputError
from app.templates.base import Capability, Template
from app.templates.calls.detect import detect
from app.templates.files import TemplateFileError, read_spec, templates_folder
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja import GgufJinja, JinjaTemplateError, jinja_template
from app.templates.reasoning_markup import THINK_TAGS
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
    show.add_argument("name", help="a template's name, or a GGUF chat template file (.jinja)")
    show.add_argument(
        "--learned",
        action="store_true",
        help="a .jinja template's call format learned from the template alone",
    )
    check = verbs.add_parser("check", help="validate a template file")
    check.add_argument("file", type=Path)


def _template(name: str) -> tuple[Template, str]:
    """The template `name` stands for and where it came from (a `.jinja` file: that file)."""
    path = Path(name)
    if path.suffix != ".jinja":
        return get_template(name), template_source(name)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{name}: cannot be read ({exc})") from exc
    return jinja_template(source), str(path)


def call_format_line(template: Template, learned: bool = False) -> str:
    """How `template` reads tool calls, in one line (see the module docstring)."""
    if isinstance(template, GgufJinja):
        if not template.source:
            return (
                "no tool-call format: this is the model's own chat template, read when a model"
                " is loaded (show FILE.jinja reads one from a file)"
            )
        if learned:
            return detect(template.source, template.bos, template.eos, families=False).describe()
        return template.detection().describe()
    if isinstance(template, HarmonyTemplate):
        return "format: harmony (read by the Harmony parser)"
    if template.tool_calls is None:
        return "no tool-call format: the template declares none, so the model gets no tools"
    return f"format: {template.tool_calls}"


def reasoning_line(template: Template) -> str:
    """How `template` writes reasoning, in one line (see the module docstring)."""
    if isinstance(template, HarmonyTemplate):
        return "reasoning: the analysis channel (read by the Harmony parser)"
    if not isinstance(template, GgufJinja):
        block = template.think_block()
        if block is None:
            return "no reasoning markup: the template's family writes none"
        return f"reasoning: {block.tags[0]!r} … {block.tags[1]!r} (the family's think tags)"
    if not template.source:
        return "no reasoning markup: read from the model's own chat template when it is loaded"
    markup, tags = template.reasoning, template.think_tags
    if markup is not None and markup.tags == tags:
        return markup.describe()
    if tags != THINK_TAGS:
        return f"reasoning: {tags[0]!r} … {tags[1]!r} (the call format's own think tags)"
    if template.thinks:
        return "reasoning: '<think>' … '</think>' (named by the template, not derived)"
    return "no reasoning markup: the template writes none that reads its own turns back"


def _described(name: str, learned: bool = False) -> dict[str, object]:
    template, source = _template(name)
    out: dict[str, object] = {"name": template.name, "source": source}
    out["tool_calls"] = template.tool_calls  # the call format (None: the model gets no tools)
    out["call_format"] = call_format_line(template, learned)
    out["reasoning"] = reasoning_line(template)
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
        try:
            described = _described(args.name, args.learned)
        except JinjaTemplateError as exc:
            raise InvalidInputError(exc.message) from exc
        print(json.dumps(described, ensure_ascii=False, indent=1))
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


__all__ = ["add_arguments", "call_format_line", "reasoning_line", "run"]
