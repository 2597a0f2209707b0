"""Functionary v3.2's tool calls, as `meetkai-functionary-medium-v3.2.jinja` writes them: each
message of an assistant turn starts with `>>>` and its recipient on a line of its own,

    >>>all
    Let me check that for you.>>>get_weather
    {"city": "Paris", "days": 3}

`all` is the user (the message is answer text), any other recipient a tool, whose message is its
arguments as one JSON object, with no closing markup: the object's end is the call's end. The
generation prompt ends with `>>>` (`opening`), so a model's answer begins with the recipient.
Tools are declared in the system turn as a TypeScript-like `functions` namespace, results come
back in a `tool` turn as they are.

The reader takes text after `>>>all` as the answer (up to the next `>>>`), several calls in a row,
a call to `python` whose message is code rather than JSON (Functionary's code interpreter, as
`{"code": …}`), and a call whose JSON is cut off by the end of the answer as a notice. A
recipient that is no name (`>>> print(x)`) is an `E-CALL-SCHEMA` notice taking its line, a tool
message that is no JSON object one taking the text up to the next `>>>`. The grammar writes the
first call without its `>>>` (the prompt wrote it), an answer that begins with no call with
`all` (`answer_first`), holds each call's name to a declared tool and its arguments to the
tool's schema, and lets `>>>all` hand back to free text after a call (llama.cpp triggers only on
a `>>>` that `all` does not follow, for the same reason).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.constrain.constraint import json_body
from app.domain.messages import ToolDescription
from app.harmony.schema_ts import to_typescript
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import skip_space, tojson
from app.templates.calls.reading import Read, Remembering, Scan

MARK, ANSWER, CODE = ">>>", "all", "python"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
SYSTEM = (
    "You are capable of executing available function(s) if required.\n"
    "Only execute function(s) when absolutely necessary.\n"
    "Ask for the required input to:recipient==all\n"
    "Use JSON for function arguments.\n"
    "Respond in this format:\n>>>${recipient}\n${content}\n"
    "Available functions:\n"
    "// Supported function definitions that should be called when necessary.\n"
    "namespace functions {\n\n"
)


def _declaration(tool: Mapping[str, Any]) -> str:
    """One tool as the template declares it inside the `functions` namespace."""
    params = tool.get("parameters") or {}
    head = f"// {tool.get('description', '')}\ntype {tool['name']}"
    if isinstance(params, Mapping) and params.get("properties"):
        return f"{head} = (_: {to_typescript(params)}) => any;\n\n"
    return f"{head} = () => any;\n\n"


class Functionary(Remembering, CallFormat):
    name = "functionary"
    triggers = (MARK,)
    opening = MARK
    closers = "}\n>"
    separator = ""

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        body = "".join(_declaration(t["function"]) for t in openai_tools(tools))
        return SYSTEM + body + "} // namespace functions"

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out: list[Piece] = []
        for call in calls:
            out += [Piece(MARK, True), Piece(call.name), Piece("\n", True), Piece(call.arguments)]
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(text)]

    def markers(self) -> tuple[str, ...]:
        return (MARK, MARK + ANSWER)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        line = text.find("\n", len(MARK))
        if line < 0:
            return _unfinished_recipient(text, final)
        name = text[len(MARK) : line].strip()
        if name == ANSWER:
            return [], line + 1  # the answer follows, up to the next `>>>`
        if not _NAME.fullmatch(name):
            raise CallSyntaxError(f"{name[:40]!r} after {MARK} names no tool", "", line + 1)
        at = skip_space(text, line + 1)
        if at == len(text) and not final:
            return None
        if text.startswith("{", at):
            return _json_call(text, at, name, final, scan)
        return _other_message(text, at, name, final, scan)

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        names, rules = [], []
        for i, (name, schema) in enumerate(tools.items()):
            names.append(f"t_{i}")
            rules.append(f"t_{i}: {json.dumps(name + chr(10))} a_{i}")
            rules.append(f"a_{i}: {json_body(dict(schema) if schema else {'type': 'object'})}")
        back = json.dumps(ANSWER + "\n")  # `>>>all`: free text again
        heads = [f"call_first: {' | '.join(names)}", f"call_rest: call_first | {back}"]
        return "\n".join([*heads, f"answer_first: {back}", *rules])


def _unfinished_recipient(text: str, final: bool) -> tuple[list[ToolCall], int] | None:
    """`>>>` and a recipient whose line has not ended: None until it does (or the answer ends)."""
    if not final:
        return None
    name = text[len(MARK) :].strip()
    if name in ("", ANSWER):
        return [], len(text)  # nothing (or only the answer's header) was written
    if _NAME.fullmatch(name):
        raise CallSyntaxError("the call has no arguments", name)
    raise CallSyntaxError(f"{name[:40]!r} after {MARK} names no tool")


def _json_call(text: str, at: int, name: str, final: bool, scan: Scan) -> Read:
    """A call whose arguments are the JSON object at `at`: it ends where the object does."""
    end = scan.json_end(text, at)
    if end is None:
        if not final:
            return None
        raise CallSyntaxError("its arguments never close", name)
    try:
        args = json.loads(text[at:end])
    except ValueError as exc:
        raise CallSyntaxError(f"its arguments are not JSON ({exc})", name, end) from exc
    return [ToolCall(name, tojson(args))], end


def _other_message(text: str, at: int, name: str, final: bool, scan: Scan) -> Read:
    """A tool message that is no JSON object: code for `python`, else a notice; either takes
    the text up to the next `>>>` (all of it at the end of the answer)."""
    cut = _next(text, scan)
    if cut is None and not final:
        return None
    end = len(text) if cut is None else cut
    if name == CODE:
        return [ToolCall(CODE, tojson({"code": text[at:end].strip()}))], end
    raise CallSyntaxError("its arguments are not a JSON object", name, end)


def _next(text: str, scan: Scan) -> int | None:
    """Where the next message (`>>>`) begins after this one's, None when none does yet."""
    at = scan.find(text, MARK, len(MARK))
    return None if at < 0 else at
