"""Nemotron Nano v2's tool calls, as `NVIDIA-Nemotron-Nano-v2.jinja` writes them: every call of
a turn in one JSON array,

    <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": …}]</TOOLCALL>

after the turn's text (on a line of its own), thinking in `<think>…</think>`. Tools are
declared in the system turn as a JSON array inside `<AVAILABLE_TOOLS>`, with the template's
wording; results come back in a user turn, inside `<TOOL_RESPONSE>[…]</TOOL_RESPONSE>`.

When the assistant's message is the last one, the template writes its text and its calls as
two assistant turns: `TEXT\\n<SPECIAL_12>\\n<SPECIAL_11>Assistant\\n<TOOLCALL>[…]</TOOLCALL>`.
The reader reads `<SPECIAL_12>` (the end of a turn), with a `<SPECIAL_11>Assistant` turn
opening after it, as the end of one turn and the start of the next: no answer text, no call,
so text then calls read the same in either shape.

The reader also takes a single object for the array, `"parameters"` for `"arguments"`,
arguments as a JSON string, and a missing `</TOOLCALL>` at the end of the answer; an array
whose later entry is not a call keeps the calls before it and gives notice of the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import call_value, json_call_rest, skip_space, tojson
from app.templates.calls.llama3 import name_guess
from app.templates.calls.reading import Read, Remembering, Scan

OPEN, CLOSE = "<TOOLCALL>", "</TOOLCALL>"
END, NEXT = "<SPECIAL_12>", "<SPECIAL_11>Assistant\n"
INTRO = "You can use the following tools to assist the user if required:\n<AVAILABLE_TOOLS>["
OUTRO = (
    "]</AVAILABLE_TOOLS>\n\nIf you decide to call any tool(s), use the following format:\n"
    '<TOOLCALL>[{{"name": "tool_name1", "arguments": "tool_args1"}}, '
    '{{"name": "tool_name2", "arguments": "tool_args2"}}]</TOOLCALL>\n\n'
    "The user will execute tool-calls and return responses from tool(s) in this format:\n"
    '<TOOL_RESPONSE>[{{"tool_response1"}}, {{"tool_response2"}}]</TOOL_RESPONSE>\n\n'
    "Based on the tool responses, you can call additional tools if needed, correct tool calls"
    " if any errors are found, or just respond to the user."
)


def _array_calls(raw: str) -> list[ToolCall]:
    """The calls in a `[…]` (or a lone `{…}`); `CallSyntaxError` (with the calls before the
    bad entry) for one that is not a call."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise CallSyntaxError(f"the calls are not JSON ({exc})", name_guess(raw)) from exc
    entries = value if isinstance(value, list) else [value]
    calls: list[ToolCall] = []
    for entry in entries:
        try:
            calls.append(call_value(entry))
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, calls=tuple(calls)) from exc
    if not calls:
        raise CallSyntaxError("the call list is empty")
    return calls


class Nemotron(Remembering, CallFormat):
    name = "nemotron"
    triggers = (OPEN, END)
    closers = ">]}"
    separator = ""
    result_role = "user"
    results_together = True
    ends = (END,)

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        declared = ", ".join(tojson(t["function"]) for t in openai_tools(tools))
        return INTRO + declared + OUTRO

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out = [Piece(OPEN + "[", True)]
        for i, call in enumerate(calls):
            out.append(Piece((", " if i else "") + '{"name": "', True))
            out += [Piece(call.name), Piece('", "arguments": ', True), Piece(call.arguments)]
            out.append(Piece("}", True))
        return [*out, Piece("]" + CLOSE, True)]

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece("<TOOL_RESPONSE>[", True), Piece(text), Piece("]</TOOL_RESPONSE>", True)]

    def markers(self) -> tuple[str, ...]:
        return (OPEN, CLOSE, END, "<SPECIAL_11>")

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        if text.startswith(END):
            return _turn_end(text, final)
        at = skip_space(text, len(OPEN))
        if at == len(text):
            if not final:
                return None
            raise CallSyntaxError("the call is empty")
        if text[at] not in "[{":
            raise CallSyntaxError(f"no JSON array follows {OPEN}", "", _through_close(text, scan))
        end = scan.json_end(text, at)
        if end is None:
            closed = _through_close(text, scan)
            if not final and closed is None:
                return None
            raise CallSyntaxError("the calls' JSON never closes", name_guess(text[at:]), closed)
        rest = skip_space(text, end)
        if text.startswith(CLOSE, rest):
            length = rest + len(CLOSE)
        elif not final and CLOSE.startswith(text[rest:]):
            return None
        else:
            length = end
        try:
            return _array_calls(text[at:end]), length
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, length, exc.calls) from exc

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        one = json_call_rest(tools, '{"name": "', '", "arguments": ', "}")
        one = one.replace("call_rest:", "nemotron_call:", 1)
        head = f'call_rest: "[" nemotron_call (", " nemotron_call)* "]" "{CLOSE}"'
        return "\n".join([head, one])


def _turn_end(text: str, final: bool) -> tuple[list[ToolCall], int] | None:
    """`<SPECIAL_12>` read as the end of a turn, with the assistant turn that opens after it."""
    at = skip_space(text, len(END))
    if text.startswith(NEXT, at):
        return [], at + len(NEXT)
    if not final and NEXT.startswith(text[at:]):
        return None
    return [], at


def _through_close(text: str, scan: Scan) -> int | None:
    end = scan.find(text, CLOSE)
    return None if end < 0 else end + len(CLOSE)
