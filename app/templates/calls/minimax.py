"""MiniMax-M3's tool calls, as `MiniMax-M3.jinja` writes them: every call of a turn in one
block, every tag led by the namespace token `]<]minimax[>[` (`NS` below), each argument a tag
named after the argument itself:

    NS<tool_call>
    NS<invoke name="get_weather">NS<city>Paris, FranceNS</city>NS<days>3NS</days>NS</invoke>
    NS</tool_call>

A value that is an object or an array is expanded into tags (an object's keys as tags, an
array's entries as `NS<item>…NS</item>`); a string is written as it is, a boolean as
`true`/`false`, a number as Jinja prints it, a null argument is left out. Thinking is
`<mm:think>…</mm:think>`; a turn that does not think opens with a bare `</mm:think>`. Tools
are declared in the developer turn as JSON inside `<tools>`; results come back in one `tool`
turn, each in `<response>…</response>`.

The reader takes a block of one or more calls, text before it as answer text, a lone
`NS<invoke …>` without its block (one call), a block whose `NS</tool_call>` is missing at the
end of the answer, and reads a bare `</mm:think>` (an empty think block's close) as no call
and no answer text. A value is typed by the tool's schema when the format was given the
tools' schemas (`MiniMax(schemas)`: a string stays text, an integer is read as JSON, an
array's `item`s are a list); without a schema, a value is JSON when it parses, else text, and
tags that are all `item` are a list. A call that can never be valid (a tag closed under
another name, text beside tags, no name) is a `CallSyntaxError` taking its block, with the
calls written before it standing. The grammar (`minimax_grammar`) holds each call to a
declared tool and its arguments to the tool's schema, as llama.cpp's MiniMax-M3 parser does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import (
    CallFormat,
    CallSyntaxError,
    Piece,
    ToolCall,
    arguments_of,
    openai_tools,
)
from app.templates.calls.hermes import skip_space, tojson
from app.templates.calls.minimax_grammar import NS, minimax_call_rest
from app.templates.calls.reading import Read, Remembering, Scan
from app.templates.calls.xml_calls import typed_value

OPEN, CLOSE = "<tool_call>", "</tool_call>"
INVOKE, INVOKE_END = '<invoke name="', "</invoke>"
THINK = ("<mm:think>", "</mm:think>")
MAX_DEPTH = 32  # how deep values may nest before the call is refused
INTRO = (
    "# Tools\nYou may call one or more tools to assist with the user query.\n"
    "Here are the tools available in JSONSchema format:\n\n<tools>\n"
)
EXAMPLE = (
    f"</tools>\n\nTo call tools, wrap all invocations in a single {NS}{OPEN}{NS}{CLOSE} block."
    " Parameter values containing nested objects or arrays are recursively expanded into XML"
    f' elements. Example:\n\n{NS}{OPEN}\n{NS}<invoke name="tool-name-1">{NS}<param-1>value-1'
    f"{NS}</param-1>{NS}<param-2>{NS}<item>{NS}<key-a>val-a{NS}</key-a>{NS}<key-b>val-b"
    f'{NS}</key-b>{NS}</item>{NS}</param-2>{NS}</invoke>\n{NS}<invoke name="tool-name-2">'
    f"{NS}<param-1>value-1{NS}</param-1>{NS}</invoke>\n{NS}{CLOSE}"
)
_NOT_IN_NAME = ('"', "<", ">", "\n", NS)
_CLOSES = ((NS + OPEN, NS + CLOSE), (NS + INVOKE, NS + INVOKE_END))  # what ends what it opens


class _More(Exception):
    """The text ends before the markup is whole."""


def _at(text: str, at: int, literal: str) -> bool:
    """Whether `literal` stands at `at`; `_More` while the text ends inside it."""
    if text.startswith(literal, at):
        return True
    if len(text) - at < len(literal) and literal.startswith(text[at:]):
        raise _More
    return False


def _space(text: str, at: int) -> int:
    """Past the whitespace at `at`; `_More` when the text ends in it."""
    at = skip_space(text, at)
    if at == len(text):
        raise _More
    return at


def _types(schema: Mapping[str, Any] | None) -> set[str]:
    kind = (schema or {}).get("type")
    return {kind} if isinstance(kind, str) else {str(k) for k in kind or ()}


def _sub_schema(schema: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    """The schema of `key` inside a value of `schema` (an object's property, an array's item)."""
    if not isinstance(schema, Mapping):
        return None
    if "array" in _types(schema):
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    properties = schema.get("properties")
    found = properties.get(key) if isinstance(properties, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _typed(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A value written as text, as the value its schema asks for."""
    types = _types(schema)
    if not raw.strip() and "string" not in types:
        if "array" in types:
            return []
        if "object" in types:
            return {}
    return typed_value(raw, schema)


def _container(pairs: list[tuple[str, Any]], schema: Mapping[str, Any] | None) -> Any:
    """Nested tags as an array (the schema says so, or, without one, every tag is `item`)
    or an object."""
    types = _types(schema)
    as_list = "array" in types or ("object" not in types and all(key == "item" for key, _ in pairs))
    return [value for _, value in pairs] if as_list else dict(pairs)


class _Reader:
    """One block's calls, read from the `NS` that starts it (see `MiniMax.read`)."""

    def __init__(self, text: str, schemas: Mapping[str, Mapping[str, Any] | None]) -> None:
        self.text = text
        self.schemas = schemas
        self.calls: list[ToolCall] = []
        self.open_call: str | None = None  # the call being read ("": its name is still to come)
        self.closing = NS + CLOSE  # what ends the markup read (a lone invoke's own close)

    def block(self) -> int:
        """The length the block takes; `_More` while it is open, `CallSyntaxError` when it
        can never be a block."""
        text, at = self.text, len(NS)
        if not _at(text, at, OPEN):
            if _at(text, at, INVOKE):
                self.closing = NS + INVOKE_END
                return self.invoke(0)  # a lone invoke: one call
            raise CallSyntaxError(f"no {OPEN} follows {NS}", "", len(NS))
        at += len(OPEN)
        while True:
            at = _space(text, at)
            if _at(text, at, NS + CLOSE):
                return at + len(NS + CLOSE)
            if not _at(text, at, NS + INVOKE):
                raise CallSyntaxError(f"text inside the block that is no call: {text[at:][:40]!r}")
            at = self.invoke(at)

    def invoke(self, at: int) -> int:
        """Read the call at `at` (`NS<invoke name="…">`); where it ends."""
        self.open_call = ""
        text, at = self.text, at + len(NS + INVOKE)
        end = text.find('">', at)
        name = text[at : end if end >= 0 else len(text)]
        if any(bad in name for bad in _NOT_IN_NAME) or (end >= 0 and not name.strip()):
            raise CallSyntaxError("the call has no name")
        if end < 0:
            raise _More
        self.open_call = name
        schema = self.schemas.get(name)
        args, at = self.members(end + 2, NS + INVOKE_END, schema, 0)
        self.calls.append(ToolCall(name, tojson(args)))
        self.open_call = None
        return at

    def members(
        self, at: int, close: str, schema: Mapping[str, Any] | None, depth: int
    ) -> tuple[Any, int]:
        """The tags from `at` up to `close` as one value; and where `close` ends."""
        if depth > MAX_DEPTH:
            raise CallSyntaxError(f"its arguments nest deeper than {MAX_DEPTH}", self.name)
        pairs: list[tuple[str, Any]] = []
        while True:
            at = _space(self.text, at)
            if _at(self.text, at, close):
                if not depth:
                    return dict(pairs), at + len(close)
                return _container(pairs, schema), at + len(close)
            key, at = self.tag(at)
            value, at = self.value(at, key, _sub_schema(schema, key), depth + 1)
            pairs.append((key, value))

    def tag(self, at: int) -> tuple[str, int]:
        """The key of the tag `NS<KEY>` at `at`; and where it ends."""
        text = self.text
        if not _at(text, at, NS + "<") or _at(text, at, NS + "</"):
            raise CallSyntaxError(f"text where an argument belongs: {text[at:][:40]!r}", self.name)
        start = at + len(NS) + 1
        end = text.find(">", start)
        key = text[start : end if end >= 0 else len(text)]
        if any(bad in key for bad in ('"', "<", "\n", NS)) or (end >= 0 and not key.strip()):
            raise CallSyntaxError("an argument has no name", self.name)
        if end < 0:
            raise _More
        return key, end + 1

    def value(
        self, at: int, key: str, schema: Mapping[str, Any] | None, depth: int
    ) -> tuple[Any, int]:
        """The value of `key` from `at` through its `NS</KEY>`; and where that ends."""
        text, close = self.text, f"{NS}</{key}>"
        first = skip_space(text, at)
        if text.startswith(NS + "<", first) and not text.startswith(NS + "</", first):
            return self.members(first, close, schema, depth)
        end = text.find(NS, at)
        if end < 0:
            raise _More
        if not _at(text, end, close):
            raise CallSyntaxError(f"the argument {key} is not closed by {close}", self.name)
        return _typed(text[at:end], schema), end + len(close)

    @property
    def name(self) -> str:
        return self.open_call or ""

    def cut(self) -> tuple[list[ToolCall], int]:
        """The calls of a block the answer ended in (its close missing)."""
        if self.open_call is not None:
            raise CallSyntaxError(
                "the call was cut off before it closed", self.name, None, tuple(self.calls)
            )
        if not self.calls:
            raise CallSyntaxError("the call block is empty")
        return self.calls, len(self.text)


class MiniMax(Remembering, CallFormat):
    name = "minimax-m3"
    triggers = (NS, THINK[1])
    closers = ">"
    separator = ""
    results_together = True
    think = THINK

    def __init__(self, schemas: Mapping[str, Mapping[str, Any] | None] | None = None) -> None:
        self.schemas = dict(schemas or {})

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        declared = "".join(f"<tool>{tojson(t['function'])}</tool>\n" for t in openai_tools(tools))
        return INTRO + declared + EXAMPLE

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out = [Piece(NS + OPEN + "\n", True)]
        for call in calls:
            out += [Piece(NS + INVOKE, True), Piece(call.name), Piece('">', True)]
            args = arguments_of(call)
            if isinstance(args, dict):
                out += _members(args)
            else:
                out.append(Piece(call.arguments))
            out.append(Piece(NS + INVOKE_END + "\n", True))
        return [*out, Piece(NS + CLOSE, True)]

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece("\n<response>", True), Piece(text), Piece("</response>", True)]

    def markers(self) -> tuple[str, ...]:
        return (NS, OPEN, CLOSE, *THINK)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        if text.startswith(THINK[1]):
            return [], len(THINK[1])  # the close of an empty think block
        for head, close in _CLOSES:
            if not final and text.startswith(head) and scan.find(text, close) < 0:
                scan.wait_for(text, close)
                return None  # a block (a lone invoke) ends, well formed or not, at its close
        reader = _Reader(text, self.schemas)
        try:
            length = reader.block()
        except _More:
            return reader.cut() if final else None
        except CallSyntaxError as exc:
            return _bad(text, final, exc, reader)
        return reader.calls, length

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return minimax_call_rest(tools)


def _bad(
    text: str, final: bool, exc: CallSyntaxError, reader: _Reader
) -> tuple[list[ToolCall], int] | None:
    """A block that can never be valid: `CallSyntaxError` taking it through its
    `NS</tool_call>` (a lone invoke through its `NS</invoke>`; all there is at the end of the
    answer), the calls before the bad one standing; None while that close is still to come."""
    calls = tuple(reader.calls)
    if exc.length is not None:
        raise CallSyntaxError(exc.message, exc.name, exc.length, calls) from exc
    end = text.find(reader.closing)
    if end < 0 and not final:
        return None
    length = None if end < 0 else end + len(reader.closing)
    raise CallSyntaxError(exc.message, exc.name or reader.name, length, calls) from exc


def _members(args: Mapping[str, Any]) -> list[Piece]:
    """An object's entries as the template's `to_xml` writes them (a null one left out)."""
    out: list[Piece] = []
    for key, value in args.items():
        if value is not None:
            out += [Piece(NS + "<", True), Piece(key), Piece(">", True), *_xml(value)]
            out += [Piece(NS + "</", True), Piece(key), Piece(">", True)]
    return out


def _xml(value: Any) -> list[Piece]:
    """One value as `to_xml` writes it (a string as it is, numbers as Jinja prints them)."""
    if isinstance(value, Mapping):
        return _members(value)
    if isinstance(value, list):
        item = [Piece(NS + "<item>", True)], [Piece(NS + "</item>", True)]
        return [p for v in value for p in (*item[0], *_xml(v), *item[1])]
    if isinstance(value, bool):
        return [Piece("true" if value else "false")]
    return [] if value is None else [Piece(str(value))]
