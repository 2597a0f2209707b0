"""Tool calls for Gemma 3, which has no tool tokens: a format defined by the prompt.

The choice: a call is a fenced block of its own kind holding one JSON object,

    ```tool_call
    {"name": "get_weather", "arguments": {"city": "Oslo"}}
    ```

and a result comes back in a ```` ```tool_output ```` block (Google's word for it in its Gemma
function-calling examples). Why this one: JSON is what a small model copies most reliably
(a Python call, ```` ```tool_code ````, asks it to quote and escape by Python's rules, and a
reader to evaluate Python); `name`/`arguments` is the shape most instruction data used; and a
fence named `tool_call` cannot be mistaken for a JSON code block the user asked for (a
```` ```json ```` trigger would turn every such answer into a call). The tools are declared,
with how to call them, in the first user turn (Gemma has no system turn: the template puts
its text there).

The reader takes one object per block, `"parameters"` for `"arguments"`, and a block whose
closing fence is missing at the end of the answer; several blocks in a row are several calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import call_object, json_call_rest, skip_space, tagged_calls, tojson
from app.templates.calls.llama3 import name_guess
from app.templates.calls.reading import Read, Remembering, Scan

OPEN, FENCE, RESULT = "```tool_call", "```", "```tool_output"
INTRO = "You can use these tools (each a JSON schema):\n"
HOW = (
    "\n\nTo call a tool, reply with only this block, nothing after it:\n```tool_call\n"
    '{"name": "<tool name>", "arguments": {<argument name>: <value>, ...}}\n```\n'
    "For several calls, write one block after another. Each result comes back to you in a"
    " ```tool_output block; then answer the user. If no tool helps, answer directly."
)


class Gemma(Remembering, CallFormat):
    name = "gemma"
    triggers = (OPEN,)
    closers = "}`"
    result_role = "user"
    results_together = True

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return INTRO + "\n".join(tojson(t["function"]) for t in openai_tools(tools)) + HOW

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        return tagged_calls(calls, OPEN, FENCE)

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(RESULT + "\n", True), Piece(text), Piece("\n" + FENCE + "\n", True)]

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        at = skip_space(text, len(OPEN))
        if at == len(text):
            if not final:
                return None
            raise CallSyntaxError("the call is empty")
        if text[at] != "{":
            raise CallSyntaxError("the block holds no JSON object", "", at)
        end = scan.json_end(text, at)
        if end is None:
            if not final:
                return None
            raise CallSyntaxError("the call's JSON never closes", name_guess(text[at:]))
        rest = skip_space(text, end)
        if text.startswith(FENCE, rest):
            length = rest + len(FENCE)
        elif not final and FENCE.startswith(text[rest:]):
            return None
        else:
            length = end
        try:
            return [call_object(text[at:end])], length
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, length) from exc

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return json_call_rest(tools, '\n{"name": "', '", "arguments": ', "}\n", FENCE)
