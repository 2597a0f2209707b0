"""The Responses API's tools as the model is offered them, and the names its calls come back as.

Guarantees: every tool a request declares is offered to the model as a function, left out of
the prompt and named for the warning header, or a 400 naming it (`tools.I...`), by one rule:
a `function` tool is offered as it is; a `custom` (freeform) tool is offered as a function of
one string parameter, `input`, holding the tool's whole input as plain text (not JSON), its
description saying so and, for a `grammar` format, carrying the grammar's definition in full
(lark or regex, as the client wrote it) — which the model reads but nothing enforces, as the
warning header's notes say; a `namespace`'s function and custom tools are offered flattened,
each as `NAMESPACE__NAME` (Codex's own spelling of an MCP tool, `mcp__server__tool`; a
namespace that already ends in `__`, as older Codex sends `mcp__server__`, is joined as it is),
the namespace's description added to each; a tool marked `defer_loading` is offered at once (no
tool search runs here); a hosted tool (`wire.HOSTED`) is left out; any other type, in a
namespace any type but function or custom, and two tools offered under one name, are a 400. The
model's call to a custom tool is answered as a `custom_tool_call` whose `input` is that one
string (`input_of`), and a call to a namespaced tool under the tool's own `name` with the
`namespace` field OpenAI's API defines on `function_call` and `custom_tool_call` items — Codex
looks a call up by that pair, never by a flattened name (`Named`). `names` reads the same rule
back from the tools a response echoes, so the answer names each call as the request declared
it; `arguments_of` turns a `custom_tool_call` sent back as input into the arguments the model
wrote it with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.messages import ToolDescription
from app.server.errors import ApiError, validated
from app.server.intake import check_schema
from app.server.responses.wire import HOSTED, CustomTool, FunctionTool, NamespaceTool

INPUT = "input"  # the one parameter a custom tool is offered with
FREEFORM = (
    f"Freeform tool: put the tool's whole input, as plain text, in its one argument, `{INPUT}`"
    " (the text itself, not JSON)."
)
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {INPUT: {"type": "string", "description": "The tool's input, as plain text."}},
    "required": [INPUT],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Named:
    """How the model's call to one offered function is answered: as the tool declared it."""

    name: str  # the tool's own name
    namespace: str | None = None  # its namespace's name, when it was declared in one
    custom: bool = False  # a custom tool: answered as a `custom_tool_call`


@dataclass(frozen=True)
class Offered:
    """The tools a request declares, as the model is offered them."""

    functions: tuple[ToolDescription, ...] = ()
    left_out: tuple[str, ...] = ()  # hosted tools, as the warning header names them
    notes: tuple[str, ...] = ()  # what is offered otherwise than declared, for the header


def flat(namespace: str | None, name: str) -> str:
    """The name a tool is offered under: its own, or joined to its namespace's by `__`."""
    if not namespace:
        return name
    return f"{namespace}{name}" if namespace.endswith("__") else f"{namespace}__{name}"


def input_of(arguments: str) -> str:
    """A custom tool's input from the arguments of the function it was offered as: the string
    `input` holds, or, when the model wrote no such object, what it wrote, as it is."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get(INPUT), str):
        return str(value[INPUT])
    return arguments


def arguments_of(text: str) -> str:
    """The arguments of a call to a custom tool whose input is `text` (`input_of`'s inverse)."""
    return json.dumps({INPUT: text}, ensure_ascii=False)


def _custom(tool: CustomTool, name: str, within: str) -> tuple[ToolDescription, bool]:
    """A custom tool as the function it is offered as, and whether a grammar is described."""
    form, said = tool.format, [tool.description, FREEFORM]
    if form is not None and form.type == "grammar":
        said.append(f"The input follows this {form.syntax or 'lark'} grammar:\n{form.definition}")
    described = "\n\n".join(s for s in (*said, within) if s)
    return ToolDescription(name=name, description=described, parameters=INPUT_SCHEMA), len(said) > 2


class _Offering:
    """The tools read one by one (see the module guarantees)."""

    def __init__(self) -> None:
        self.functions: dict[str, ToolDescription] = {}
        self.left_out: list[str] = []
        self.grammars: list[str] = []

    def tool(self, tool: dict[str, Any], param: str, space: NamespaceTool | None = None) -> None:
        kind = tool.get("type")
        namespace = space.name if space else None
        within = f"({space.name}: {space.description})" if space and space.description else ""
        if kind in ("function", None):  # without a type: refused by `FunctionTool`, named
            function = validated(FunctionTool, tool, param)
            name = flat(namespace, function.name)
            said = "\n\n".join(s for s in (function.description, within) if s)
            self._offer(
                ToolDescription(name=name, description=said, parameters=function.parameters), param
            )
        elif kind == "custom":
            custom = validated(CustomTool, tool, param)
            described, grammar = _custom(custom, flat(namespace, custom.name), within)
            self._offer(described, param)
            self.grammars += [described.name] if grammar else []
        elif kind == "namespace" and space is None:
            held = validated(NamespaceTool, tool, param)
            for j, inner in enumerate(held.tools):
                self.tool(inner, f"{param}.tools.{j}", held)
        elif kind in HOSTED and space is None:
            self.left_out.append(f"{kind} tool")
        else:
            where = "a namespace holds" if space else "of the Responses API"
            raise ApiError(
                400,
                f"{param}.type: {kind!r} is no tool type {where}",
                param=f"{param}.type",
                code="unsupported_tool",
            )

    def _offer(self, described: ToolDescription, param: str) -> None:
        if described.name in self.functions:
            raise ApiError(
                400,
                f"{param}: a tool named {described.name!r} is declared twice",
                param=f"{param}.name",
                code="invalid_value",
            )
        self.functions[described.name] = described

    def offered(self) -> Offered:
        listed = ", ".join(self.grammars)
        said = f"custom tool grammars ({listed}) are described to the model, not enforced"
        notes = (said,) if self.grammars else ()
        return Offered(tuple(self.functions.values()), tuple(dict.fromkeys(self.left_out)), notes)


def offered(tools: Sequence[dict[str, Any]] | None) -> Offered:
    """The tools declared, as the model is offered them (see the module guarantees)."""
    offering = _Offering()
    for i, tool in enumerate(tools or ()):
        offering.tool(tool, f"tools.{i}")
    return offering.offered()


def check_schemas(tools: Sequence[dict[str, Any]] | None) -> None:
    """A 400 naming the function (in a namespace too) whose parameters nest too deep."""
    for i, tool in enumerate(tools or ()):
        inner = tool.get("tools") if tool.get("type") == "namespace" else None
        if isinstance(inner, list):
            listed = [(f"tools.{i}.tools.{j}", t) for j, t in enumerate(inner)]
        else:
            listed = [(f"tools.{i}", tool)]
        for param, function in listed:
            if isinstance(function, dict) and function.get("type") in ("function", None):
                check_schema(function.get("parameters"), f"{param}.parameters")


def names(tools: Sequence[Any]) -> dict[str, Named]:
    """The offered names whose calls are answered otherwise than as a plain `function_call`,
    read from the tools a response echoes (checked as the request was converted)."""
    said: dict[str, Named] = {}
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == "custom":
            said[str(tool["name"])] = Named(str(tool["name"]), custom=True)
        elif kind == "namespace":
            space = str(tool["name"])
            for inner in tool.get("tools") or ():
                name = str(inner["name"])
                said[flat(space, name)] = Named(name, space, inner.get("type") == "custom")
    return said


__all__ = [
    "INPUT",
    "INPUT_SCHEMA",
    "Named",
    "Offered",
    "arguments_of",
    "check_schemas",
    "flat",
    "input_of",
    "names",
    "offered",
]
