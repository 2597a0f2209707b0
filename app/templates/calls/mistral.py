"""Mistral's tool calls, as `mistralai-Mistral-Nemo-Instruct-2407.jinja` writes them.

Tools go in `[AVAILABLE_TOOLS][…][/AVAILABLE_TOOLS]` (the template puts them before the last
user `[INST]`), calls in `[TOOL_CALLS][{"name": …, "arguments": …, "id": "<9 alnum>"}, …]`,
each result in `[TOOL_RESULTS]{"content": …, "call_id": …}[/TOOL_RESULTS]`. Every marker is a
control token in Mistral's vocabulary: `markers` lists them, the prompt side writes them as
markup and what a tool or a user wrote as content (never parsed for control tokens).

A call's id pairs it with its result; the conversation keeps no ids, so they are made from the
call's place in the conversation (`call_id`): the same conversation always gets the same ids.
A result is written as the template writes it (`content | string`) when it is JSON, so the
whole object stays JSON; other text is written as a JSON string, as mistral-common does.

The reader takes the array (or one bare object) after `[TOOL_CALLS]`, `"arguments"` as an
object or a JSON string, `"parameters"` for `"arguments"`; it ignores the model's ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import call_object, call_value, json_call_rest, skip_space, tojson
from app.templates.calls.llama3 import name_guess
from app.templates.calls.reading import Read, Remembering, Scan, json_end

CALLS, TOOLS, END_TOOLS = "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]"
RESULTS, END_RESULTS = "[TOOL_RESULTS]", "[/TOOL_RESULTS]"


def call_id(index: int) -> str:
    """The id of the conversation's `index`-th call: nine letters and digits."""
    return hashlib.sha256(f"call {index}".encode()).hexdigest()[:9]


def _tool_json(tool: Mapping[str, Any]) -> str:
    """One declaration as the template writes it (a string value unescaped there; JSON-escaped
    here, the same for any text without quotes, backslashes or control characters)."""
    fields = ", ".join(f'"{k}": {tojson(v)}' for k, v in tool["function"].items() if k != "return")
    return '{"type": "function", "function": {' + fields + "}}"


def _content(text: str) -> str:
    """A result as the JSON value the template writes: JSON as it is, other text quoted."""
    try:
        json.loads(text)
    except ValueError:
        return tojson(text)
    return text


class Mistral(Remembering, CallFormat):
    name = "mistral"
    triggers = (CALLS,)
    closers = "]}"
    results_together = True
    separator = ""

    def declare_pieces(self, tools: Sequence[ToolDescription]) -> list[Piece]:
        """The declaration: markers as markup, the tools' JSON as content."""
        body = "[" + ", ".join(_tool_json(t) for t in openai_tools(tools)) + "]"
        return [Piece(TOOLS, True), Piece(body), Piece(END_TOOLS, True)]

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return "".join(p.text for p in self.declare_pieces(tools))

    def write_ids(self, calls: Sequence[ToolCall], ids: Sequence[str]) -> list[Piece]:
        """`[TOOL_CALLS]` and the calls, each with its id."""
        body = ", ".join(
            '{"name": ' + tojson(c.name) + ', "arguments": ' + c.arguments + ', "id": "' + i + '"}'
            for c, i in zip(calls, ids, strict=True)
        )
        return [Piece(CALLS, True), Piece("[" + body + "]")]

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        return self.write_ids(calls, [call_id(i) for i in range(len(calls))])

    def result_id(self, text: str, ident: str) -> list[Piece]:
        """One result, answering the call `ident`."""
        body = '{"content": ' + _content(text) + ', "call_id": "' + ident + '"}'
        return [Piece(RESULTS, True), Piece(body), Piece(END_RESULTS, True)]

    def result(self, name: str, text: str) -> list[Piece]:
        return self.result_id(text, call_id(0))

    def markers(self) -> tuple[str, ...]:
        return (CALLS, TOOLS, END_TOOLS, RESULTS, END_RESULTS)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        at = skip_space(text, len(CALLS))
        if at == len(text):
            if not final:
                return None
            raise CallSyntaxError("the call is empty")
        if text[at] not in "[{":
            raise CallSyntaxError("no JSON follows [TOOL_CALLS]", "", at)
        end = scan.json_end(text, at)
        if end is None:
            if not final:
                return None
            raise CallSyntaxError(
                "the calls' JSON never closes", name_guess(text[at:]), calls=_whole_items(text, at)
            )
        return self._calls(text[at:end], end), end

    @staticmethod
    def _calls(raw: str, end: int) -> list[ToolCall]:
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise CallSyntaxError(f"the calls are not JSON ({exc})", name_guess(raw), end) from exc
        items = value if isinstance(value, list) else [value]
        if not items:
            raise CallSyntaxError("the list of calls is empty", "", end)
        try:
            return [call_value(item) for item in items]
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, end) from exc

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        one = json_call_rest(tools, '{"name": "', '", "arguments": ', ', "id": ')
        head, rules = one.split("\n", 1)
        return "\n".join(
            [
                'call_rest: "[" one_call (", " one_call)* "]"',
                "one_call: " + head.removeprefix("call_rest: ") + ' CALL_ID "}"',
                'CALL_ID: /"[a-zA-Z0-9]{9}"/',
                rules,
            ]
        )


def _whole_items(text: str, at: int) -> tuple[ToolCall, ...]:
    """The calls of a cut `[…` list at `at` that were written whole before the cut."""
    found: list[ToolCall] = []
    if text[at] != "[":
        return ()
    i = skip_space(text, at + 1)
    while i < len(text) and text[i] == "{" and (end := json_end(text, i)) is not None:
        try:
            found.append(call_object(text[i:end]))
        except CallSyntaxError:
            break
        i = skip_space(text, end)
        i = skip_space(text, i + 1) if i < len(text) and text[i] == "," else len(text)
    return tuple(found)
