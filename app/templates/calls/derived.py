"""A tool-call format learned from a chat template's own renderings (`Markup`, `DerivedFormat`).

The markup of a call is a few pieces of text (`Lit`) around the call's name and its
arguments: `section_open`, then per call `call_open NAME call_mid ARGUMENTS call_close`,
`call_sep` between calls, `section_close`. Arguments are one JSON object, or (`per_key`) one
`param_open KEY param_mid VALUE param_close` per argument, `param_sep` between them, a string
value wrapped in `quote_open`/`quote_close` where the template quotes strings. A `Lit` may
have holes: text that differs from call to call (a call id, an index), matched loosely.

Guarantees: `read` takes exactly the text one section of calls holds (whitespace inside the
markup is matched leniently), None while the text may still grow into it, a `CallSyntaxError`
for text that cannot; a per-key value is JSON where it reads as a non-string JSON value, text
otherwise; `write` gives back text this format reads. It has no model-specific code: what it
knows, it learned from the template (`app/templates/calls/detect.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from app.domain.messages import ToolDescription
from app.templates.calls.format import (
    CallFormat,
    CallSyntaxError,
    Piece,
    ToolCall,
    openai_tools,
)
from app.templates.calls.hermes import tojson

HOLE = "\ue010"  # where call-to-call text (an id, an index) was in a rendering


@dataclass(frozen=True)
class Lit:
    """Markup text; `parts` are its literal pieces, a hole between each two."""

    parts: tuple[str, ...] = ("",)
    sample: str = ""  # one rendering of it, holes filled

    @classmethod
    def of(cls, *variants: str) -> Lit:
        """The markup that matches every variant (the text where they differ is a hole)."""
        first = variants[0]
        if all(v == first for v in variants):
            return cls(tuple(first.split(HOLE)), first.replace(HOLE, ""))
        head = _common_prefix(list(variants))
        tail = _common_suffix([v[len(head) :] for v in variants])
        return cls(tuple(f"{head}{HOLE}{tail}".split(HOLE)), first.replace(HOLE, ""))

    @property
    def text(self) -> str:
        return HOLE.join(self.parts)

    def pattern(self) -> str:
        return "[^\\n]*?".join(_loose(p) for p in self.parts)

    def lead(self) -> str:
        """The literal text it starts with (up to its first hole)."""
        return self.parts[0]


def _loose(text: str) -> str:
    """`text` as a regular expression in which each run of whitespace may be any run."""
    return "".join("\\s*" if s.isspace() else re.escape(s) for s in re.split(r"(\s+)", text) if s)


def _common_prefix(items: list[str]) -> str:
    n = 0
    while all(len(s) > n and s[n] == items[0][n] for s in items):
        n += 1
    return items[0][:n]


def _common_suffix(items: list[str]) -> str:
    return _common_prefix([s[::-1] for s in items])[::-1]


@dataclass(frozen=True)
class Markup:
    """What a template writes around its calls (see the module docstring)."""

    section_open: Lit
    call_open: Lit
    call_mid: Lit
    call_close: Lit
    call_sep: Lit
    section_close: Lit
    per_key: bool = False
    param_open: Lit = Lit()
    param_mid: Lit = Lit()
    param_close: Lit = Lit()
    param_sep: Lit = Lit()
    quote_open: str = ""
    quote_close: str = ""

    @property
    def sectioned(self) -> bool:
        return bool(self.section_open.text.strip())

    def trigger(self) -> str:
        """Where a call begins: the opening markup's first literal word."""
        head = (self.section_open if self.sectioned else self.call_open).lead().strip()
        return head.split(None, 1)[0] if head else ""


class _More(Exception):
    """The text may still grow into a call."""


class DerivedFormat(CallFormat):
    """A call format learned from a template (see the module docstring)."""

    name: ClassVar[str] = "derived"
    triggers: ClassVar[tuple[str, ...]] = ()

    def __init__(self, markup: Markup) -> None:
        self.markup = markup
        self.triggers = (markup.trigger(),)  # type: ignore[misc]
        self._re: dict[str, re.Pattern[str]] = {}

    # --- the prompt side (a template renders its own; these are for everything else) ------

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return "".join(tojson(t) + "\n" for t in openai_tools(tools))

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        m = self.markup
        out = [Piece(m.section_open.sample, True)]
        for i, call in enumerate(calls):
            if i:
                out.append(
                    Piece(m.call_sep.sample + (m.section_open.sample * (not m.sectioned)), True)
                )
            out += [Piece(m.call_open.sample, True), Piece(call.name)]
            out.append(Piece(m.call_mid.sample, True))
            out += self._write_arguments(call)
            out.append(Piece(m.call_close.sample, True))
        out.append(Piece(m.section_close.sample, True))
        return [p for p in out if p.text]

    def _write_arguments(self, call: ToolCall) -> list[Piece]:
        m = self.markup
        if not m.per_key:
            return [Piece(call.arguments)]
        out: list[Piece] = []
        for i, (key, value) in enumerate(dict(json.loads(call.arguments or "{}")).items()):
            text = value if isinstance(value, str) else tojson(value)
            q = (m.quote_open, m.quote_close) if isinstance(value, str) else ("", "")
            out += [
                Piece((m.param_sep.sample if i else "") + m.param_open.sample, True),
                Piece(key),
                Piece(m.param_mid.sample + q[0], True),
                Piece(text),
                Piece(q[1] + m.param_close.sample, True),
            ]
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(text)]

    def markers(self) -> tuple[str, ...]:
        m = self.markup
        lits = (m.section_open, m.call_open, m.call_close)
        found = {p.strip() for lit in lits for p in lit.parts}
        return tuple(sorted(t for t in found | set(self.triggers) if t))

    # --- reading ----------------------------------------------------------------------------

    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        try:
            calls, end = self._section(text, final)
        except _More:
            if final:
                raise CallSyntaxError("the call markup ends before the call does") from None
            return None
        return calls, end

    def _match(self, lit: Lit, text: str, pos: int, final: bool) -> int | None:
        """Where `lit` ends when it matches at `pos`; None when it does not; `_More` when the
        text ends inside it."""
        rx = self._re.setdefault(lit.text, re.compile(lit.pattern(), re.DOTALL))
        found = rx.match(text, pos)
        if found is not None and (found.end() < len(text) or final or not lit.text.strip()):
            return found.end()
        rest, lead = text[pos:].strip(), lit.lead().strip()
        if not final and (found is not None or lead.startswith(rest) or rest.startswith(lead)):
            raise _More
        return None

    def _section(self, text: str, final: bool) -> tuple[list[ToolCall], int]:
        m = self.markup
        pos = 0
        if m.sectioned:
            pos = self._need(m.section_open, text, pos, final, "its opening")
        calls: list[ToolCall] = []
        while True:
            pos = self._need(m.call_open, text, pos, final, "a call's opening")
            call, pos = self._call(text, pos, final)
            calls.append(call)
            if not m.sectioned:
                return calls, self._match(m.section_close, text, pos, final) or pos
            after = self._match(m.section_close, text, pos, final)
            if after is not None and (m.section_close.text.strip() or pos >= len(text.rstrip())):
                return calls, after
            nxt = self._match(m.call_sep, text, pos, final)
            if nxt is None or self._match(m.call_open, text, nxt, final) is None:
                if final and not text[pos:].strip():
                    return calls, len(text)  # the closing markup was cut off
                raise CallSyntaxError("the call markup is not closed", call.name, pos)
            pos = nxt

    def _need(self, lit: Lit, text: str, pos: int, final: bool, what: str) -> int:
        end = self._match(lit, text, pos, final)
        if end is None:
            raise CallSyntaxError(f"{what} is not the markup this model's template writes")
        return end

    def _call(self, text: str, pos: int, final: bool) -> tuple[ToolCall, int]:
        m = self.markup
        follow = m.param_open.pattern() if m.per_key else "\\s*\\{"
        key = "name" + m.call_mid.text
        pattern = f"\\s*([^\\n]+?){m.call_mid.pattern()}(?={follow})"
        rx = self._re.setdefault(key, re.compile(pattern))
        found = rx.match(text, pos)
        if found is None:
            if not final and len(text) - pos < 4096:
                raise _More
            raise CallSyntaxError("the call has no name")
        name = found.group(1).strip()
        pos = found.end()
        if m.per_key:
            arguments, pos = self._keyed(text, pos, final, name)
        else:
            arguments, pos = self._json(text, pos, final, name)
        end = self._match(m.call_close, text, pos, final)
        if end is None:
            if final and not text[pos:].strip():
                end = len(text)
            else:
                raise CallSyntaxError("the call is not closed", name, pos)
        return ToolCall(name, tojson(arguments)), end

    def _json(self, text: str, pos: int, final: bool, name: str) -> tuple[Any, int]:
        start = len(text) - len(text[pos:].lstrip())
        try:
            value, end = json.JSONDecoder().raw_decode(text, start)
        except ValueError as exc:
            if not final:
                raise _More from None
            raise CallSyntaxError(f"its arguments are not JSON ({exc})", name) from exc
        if not isinstance(value, dict):
            raise CallSyntaxError("its arguments are not a JSON object", name)
        return value, end

    def _keyed(self, text: str, pos: int, final: bool, name: str) -> tuple[Any, int]:
        m = self.markup
        found: dict[str, Any] = {}
        while True:
            at = self._match(m.param_open, text, pos, final) if found or m.param_open.text else pos
            if at is None or (found and not m.param_open.text):
                return found, pos
            hit = re.compile(m.param_mid.pattern()).search(text, at)
            if hit is None or not m.param_mid.text.strip():
                if not found and at == pos:
                    return found, pos
                raise _More if not final else CallSyntaxError("an argument has no value", name)
            key, pos = text[at : hit.start()].strip(), hit.end()
            if not key or "\n" in key:
                return found, (found and pos) or at
            found[key], pos = self._value(text, pos, final, name)
            sep = self._match(m.param_sep, text, pos, final)
            if sep is None or self._match(m.param_open, text, sep, final) is None:
                return found, pos
            pos = sep

    def _value(self, text: str, pos: int, final: bool, name: str) -> tuple[Any, int]:
        m = self.markup
        close = m.param_close.pattern()
        after = f"(?:{m.param_sep.pattern()}{m.param_open.pattern()}|{m.call_close.pattern()})"
        quoted = re.escape(m.quote_open) if m.quote_open else None
        if quoted and text.startswith(m.quote_open, pos):
            rx = re.compile(f"{quoted}(.*?){re.escape(m.quote_close)}{close}", re.DOTALL)
            hit = rx.match(text, pos)
            if hit is None:
                raise _More if not final else CallSyntaxError("a value is not closed", name)
            return hit.group(1), hit.end()
        hit = re.compile(f"(.*?){close}(?={after})", re.DOTALL).match(text, pos)
        if hit is None:
            raise _More if not final else CallSyntaxError("a value is not closed", name)
        return _typed(hit.group(1).strip() if not quoted else hit.group(1)), hit.end()

    # --- the grammar ------------------------------------------------------------------------

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        m = self.markup
        first = m.section_open if m.sectioned else m.call_open
        head = _lark(Lit(("", *first.parts[1:])))
        names = " | ".join(json.dumps(n) for n in tools) or '""'
        body = "/[^<\\n]*/" if m.per_key else "json_object_"
        call = f"NAME_ {_lark(m.call_mid)} {body} {_lark(m.call_close)}"
        if m.sectioned:
            more = f"({_lark(m.call_sep)} {_lark(m.call_open)} {call})*"
            line = f"call_rest: {head} {_lark(m.call_open)} {call} {more} {_lark(m.section_close)}"
        else:
            line = f"call_rest: {head} {call}"
        return "\n".join([line, f"NAME_: {names}", 'json_object_: %json {"type": "object"}'])


def _lark(lit: Lit) -> str:
    parts = [json.dumps(p) if p else "" for p in lit.parts]
    return " /[^\\n]{0,40}/ ".join(parts).strip() or '""'


def _typed(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return text if isinstance(value, str) else value


__all__ = ["HOLE", "DerivedFormat", "Lit", "Markup"]
