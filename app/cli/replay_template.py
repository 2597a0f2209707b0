"""`harmony-desk replay --template NAME|FILE|FILE.jinja`: text read through a template's parser.

Each input line is `{"text": "...", "tools": [OpenAI-shaped declarations]}`: what a plain-text
model wrote after the generation prompt. The template is a registered name, a template file
(as the registry reads it) or a `.jinja` chat template (as a GGUF carries it). No model is
loaded: the text is fed one byte per token through a byte table, so every marker is read as
text — the same as a model whose markers are ordinary tokens. The `harmony` template (also what
gpt-oss's own `.jinja` is read as) reads the text as Harmony: its markers are o200k_harmony's
control tokens, read by the same parser as a gpt-oss model's ids (`HarmonyText`).

Guarantees: the output line has replay's shape (`shown`, `hidden`, `errors`, `stop`): each call
is a `tool_call` item whose recipient is the tool (`functions.NAME`) and whose text is its
JSON arguments; answer text is an `answer` item, reasoning goes to `hidden.analysis`, a call
that is not valid is an error and a `notice`; a line that is not such an object is an
`InvalidInputError` saying what a line must hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.domain.events import MessageDone, ParseEvent, ParseIssue, TurnDone
from app.domain.visibility import Lane
from app.errors import InvalidInputError
from app.harmony.text_stream import HarmonyText
from app.templates.base import Template
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja import JinjaTemplateError, jinja_template
from app.templates.registry import get_template, register_file

_BYTES = [bytes([i]) for i in range(256)]


class ByteTokenizer:
    """One token per byte; nothing is a control token."""

    n_vocab = 256
    eos_id = -1
    bos_ids: list[int] = []  # noqa: RUF012 - the protocol's shape

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        return list(text.encode("utf-8"))

    def token_table(self) -> Sequence[bytes]:
        return _BYTES

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [_BYTES[i] for i in ids]


def template_named(spec: str) -> Template:
    """The template `spec` names (see the module docstring)."""
    path = Path(spec)
    if path.suffix == ".jinja":
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise JinjaTemplateError(f"{spec}: cannot be read ({exc})") from exc
        return jinja_template(source)
    if path.is_file():
        return get_template(register_file(path))
    return get_template(spec)


def replay_text(template: Template, obj: Any) -> dict[str, Any]:
    """The replay line for one input line read through `template`'s parser."""
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        raise InvalidInputError('each line is an object with "text" (and optional "tools")')
    if not isinstance(obj.get("tools", []), list):
        raise InvalidInputError('"tools" must be a list of OpenAI-shaped tool declarations')
    if isinstance(template, HarmonyTemplate):
        harmony = HarmonyText(known_tools=_tool_names(obj.get("tools", [])))
        return _line(harmony.feed(obj["text"]) + harmony.finish(complete=True))
    parser = template.output_parser(ByteTokenizer())
    events: list[ParseEvent] = []
    for byte in obj["text"].encode("utf-8"):
        events += parser.feed(byte)
    events += parser.finish()
    return _line(events)


def _tool_names(tools: list[Any]) -> list[str]:
    """The recipients of the declared tools (`functions.NAME`)."""
    found = (t.get("function", {}).get("name") for t in tools if isinstance(t, dict))
    return [f"functions.{n}" for n in found if isinstance(n, str)]


def _line(events: list[ParseEvent]) -> dict[str, Any]:
    shown: list[dict[str, Any]] = []
    analysis: list[str] = []
    errors: list[dict[str, Any]] = []
    stop = None
    for e in events:
        if isinstance(e, MessageDone):
            text = e.message.text
            if e.lane is Lane.TOOL_CALL:
                shown.append({"lane": "tool_call", "text": text, "recipient": e.message.recipient})
            elif e.lane is Lane.ANALYSIS:
                analysis.append(text)
            elif text:
                shown.append({"lane": "answer", "text": text, "recipient": None})
        elif isinstance(e, ParseIssue):
            errors.append({"code": e.code.value, "severity": e.severity.value})
            shown.append({"lane": "notice", "text": e.message, "recipient": None})
        elif isinstance(e, TurnDone):
            stop = e.stop.value
    return {
        "shown": shown,
        "hidden": {"analysis": "".join(analysis)},
        "errors": errors,
        "stop": stop,
    }


__all__ = ["ByteTokenizer", "replay_text", "template_named"]
