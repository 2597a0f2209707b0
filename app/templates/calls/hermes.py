"""The Hermes tool-call format: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.

Spoken by Qwen 2.5 / Qwen 3, Hermes 2 Pro / Hermes 3, and the default for ChatML models
without their own (SmolLM2 included). The prompt side writes what Qwen 3's official template
writes (tools as JSON lines inside `<tools>`, each call in its own block, results in a user
turn inside `<tool_response>`); the reader also takes what such models emit beside that:
`"parameters"` for `"arguments"`, arguments as a JSON string, a missing closing tag at the end
of the answer, and several calls in a row; given the tools a conversation declares
(`knowing`), a fenced JSON block that calls one of them too.

Small instruct models given many tools (Qwen2.5-Coder among them) often write a call as a
Markdown block instead, `` ```json `` then `{"name": "Read", "arguments": {…}}` then
`` ``` ``; llama.cpp's Hermes 2 Pro parser took such a block as a call. `FencedHermes`, the
format `knowing` the declared tools, reads everything `Hermes` reads the same way, and besides
a block that opens with three backticks (its language `json` or none) and holds one or more
JSON objects, each `{"name": …, "arguments"|"parameters": …}` naming a declared tool, up to
the closing backticks (or the end of the answer). Any other block is answer text, every
character of it (`NotACall`), handed on as soon as it cannot be such a call: the block's
first line, or its first object's name, decides. A block naming a declared tool whose JSON is
broken is an invalid call (said, never run), taken to its closing backticks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

from app.constrain.constraint import json_body
from app.domain.messages import ToolDescription
from app.templates.calls.format import (
    CallFormat,
    CallSyntaxError,
    NotACall,
    Piece,
    ToolCall,
    openai_tools,
)
from app.templates.calls.reading import Read, Remembering, Scan

OPEN, CLOSE = "<tool_call>", "</tool_call>"
INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and"
    " arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


_ENCODER = json.JSONEncoder(ensure_ascii=False)  # built once: `json.dumps` builds one a call
_DECODER = json.JSONDecoder()


def tojson(value: Any) -> str:
    """JSON as chat templates write it (`tojson`: `, ` and `: ` separators, not ASCII-only)."""
    return _ENCODER.encode(value)


def call_object(raw: str) -> ToolCall:
    """A call from its JSON object text (`name` and `arguments`, or `parameters`)."""
    try:
        value = _DECODER.decode(raw)  # (`json.loads`, less its checks of the argument's type)
    except ValueError as exc:
        name = _name_guess(raw)
        raise CallSyntaxError(f"the call is not JSON ({exc})", name) from exc
    return call_value(value, raw)


def call_value(value: Any, raw: str | None = None) -> ToolCall:
    """A call from its JSON object, already read (`raw`: its text, where the tool is named
    when it is no call; its JSON when not given)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise CallSyntaxError('the call has no "name"', _name_guess(raw or tojson(value)))
    name = value["name"]
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise CallSyntaxError(f"its arguments are not JSON ({exc})", name) from exc
    if not isinstance(args, dict):
        raise CallSyntaxError("its arguments are not a JSON object", name)
    return ToolCall(name, tojson(args))


def _name_guess(raw: str) -> str:
    at = raw.find('"name"')
    if at < 0:
        return ""
    rest = raw[at + 6 :].lstrip(" :")
    return rest[1:].split('"', 1)[0] if rest.startswith('"') else ""


def tagged_calls(calls: Sequence[ToolCall], open_tag: str, close_tag: str) -> list[Piece]:
    """Each call as `open_tag` + `{"name": …, "arguments": …}` on its own line + `close_tag`,
    a newline between calls (the name and arguments are content)."""
    out: list[Piece] = []
    for i, call in enumerate(calls):
        out.append(Piece(("\n" if i else "") + open_tag + '\n{"name": "', True))
        out.append(Piece(call.name))
        out.append(Piece('", "arguments": ', True))
        out.append(Piece(call.arguments))
        out.append(Piece("}\n" + close_tag, True))
    return out


def json_call_rest(
    tools: Mapping[str, Mapping[str, Any] | None],
    before_name: str,
    after_name: str,
    after_arguments: str,
    close: str = "",
) -> str:
    """Lark for `call_rest` of a format that writes a call as `before_name NAME after_name
    ARGUMENTS after_arguments close`, the arguments held to each tool's schema (`close` may be
    a marker: it is a literal of its own)."""
    alternatives = []
    rules = []
    for i, (name, schema) in enumerate(tools.items()):
        alternatives.append(f"t_{i}")
        rules.append(f"t_{i}: {json.dumps(name + after_name)} a_{i}")
        rules.append(f"a_{i}: {json_body(dict(schema) if schema else {'type': 'object'})}")
    tail = " ".join(json.dumps(t) for t in (after_arguments, close) if t)
    head = f"call_rest: {json.dumps(before_name)} ({' | '.join(alternatives)}) {tail}"
    return "\n".join([head, *rules])


class Hermes(CallFormat):
    name = "hermes"
    triggers: ClassVar[tuple[str, ...]] = (OPEN,)
    closers = ">"
    result_role = "user"
    results_together = True

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        lines = "".join("\n" + tojson(t) for t in openai_tools(tools))
        return INTRO + lines + OUTRO

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        return tagged_calls(calls, OPEN, CLOSE)

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece("<tool_response>\n", True), Piece(text), Piece("\n</tool_response>", True)]

    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        end = text.find(CLOSE)
        if end < 0:
            if not final:
                return None
            body = text[len(OPEN) :].strip()
            if not body:
                raise CallSyntaxError("the call is empty")
            return [call_object(body)], len(text)
        try:
            return [call_object(text[len(OPEN) : end].strip())], end + len(CLOSE)
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, end + len(CLOSE)) from exc

    def markers(self) -> tuple[str, ...]:
        return (OPEN, CLOSE)

    def knowing(self, tools: Collection[str]) -> CallFormat:
        return FencedHermes(tools) if tools else self

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return json_call_rest(tools, '\n{"name": "', '", "arguments": ', "}\n", CLOSE)


FENCE = "```"
LANGUAGES = ("", "json")  # a fence's language (any case) that may hold a call
_HEAD = re.compile(r'\{\s*"name"\s*:\s*"([^"\\]*)"')  # an object that names its tool first
_SPACE = re.compile(r"\s+")
_NAMED = '{"name":"'  # the head above, blank space taken out


class FencedHermes(Remembering, Hermes):
    """Hermes, also reading fenced JSON calls to `tools` (see the module guarantees)."""

    triggers = (OPEN, FENCE)
    closers = ""  # the fence's first line decides: any text may (`wait_for` says when not)

    def __init__(self, tools: Collection[str]) -> None:
        self.tools = frozenset(tools)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        if not text.startswith(FENCE):
            end = scan.find(text, CLOSE)
            if end < 0 and not final:
                scan.wait_for(text, CLOSE)
                return None
            return Hermes.read(self, text, final)
        return self._fenced(text, final, scan)

    def _fenced(self, text: str, final: bool, scan: Scan) -> Read:
        at = _body(text, final)
        if at is None:
            return None
        calls: list[ToolCall] = []
        while True:
            read = self._object(text, at, final, scan)
            if read is None:
                return None
            end, call = read
            calls.append(call)
            at = skip_space(text, end)
            if text.startswith(FENCE, at):
                return calls, at + len(FENCE)
            if at == len(text):
                return (calls, at) if final else None  # final: the block ended the answer
            if text[at] != "{":  # more than calls in the block: an answer's, or still `` ` ``
                if FENCE.startswith(text[at:]) and not final:
                    return None
                raise NotACall(len(text))

    def _object(self, text: str, at: int, final: bool, scan: Scan) -> tuple[int, ToolCall] | None:
        """The call whose object opens at `at`, and where it ends (read once per held block);
        None while more text may complete it."""
        name = self._named(text, at, final)
        if name is None:
            return None
        end = scan.json_end(text, at)
        if end is None:
            if not final:
                scan.wait_for(text, "}")
                return None
            raise CallSyntaxError("the call's JSON never closes", name)
        call: ToolCall | None = scan.recall(at)
        if call is None:
            try:
                call = call_object(text[at:end])
            except CallSyntaxError as exc:  # said with the whole block, its fence closed
                close = scan.find(text, FENCE, end)
                if close < 0 and not final:
                    return None
                taken = len(text) if close < 0 else close + len(FENCE)
                raise CallSyntaxError(exc.message, name, taken) from exc
            scan.remember(at, call)
        return end, call

    def _named(self, text: str, at: int, final: bool) -> str | None:
        """The declared tool the object at `at` names; None while more text may say;
        `NotACall` when it is no call to a declared tool."""
        found = _HEAD.match(text, at)
        if found is not None:
            if found.group(1) not in self.tools:
                raise NotACall(len(text))
            return found.group(1)
        said = _SPACE.sub("", text[at : at + 64])
        if final or "\\" in said or not (_NAMED.startswith(said) or said.startswith(_NAMED)):
            raise NotACall(len(text))
        return None


def skip_space(text: str, at: int) -> int:
    """The first index at or after `at` that is not whitespace."""
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _body(text: str, final: bool) -> int | None:
    """Where the block's JSON begins, past its first line (None while that line is still
    coming); `NotACall` for a block in another language."""
    line = text.find("\n", len(FENCE))
    if line < 0:
        if final or not _language_may_be(text[len(FENCE) :]):
            raise NotACall(len(text))
        return None
    if text[len(FENCE) : line].strip().lower() not in LANGUAGES:
        raise NotACall(len(text))
    return skip_space(text, line + 1)


def _language_may_be(head: str) -> bool:
    """Whether a fence's first line, cut at `head`, may still name a language a call is in."""
    word = head.strip().lower()
    return any(lang.startswith(word) for lang in LANGUAGES)
