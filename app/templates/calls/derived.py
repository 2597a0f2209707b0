"""A tool-call format learned from a chat template's own renderings (`Markup`, `DerivedFormat`).

The markup of a call is a few pieces of text (`Lit`) around the call's name and its
arguments: `section_open`, then per call `call_open NAME call_mid ARGUMENTS call_close`,
`call_sep` between calls, `section_close`. Arguments are one JSON object, or (`per_key`) one
`param_open KEY param_mid VALUE param_close` per argument, `param_sep` between them, a string
value wrapped in `quote_open`/`quote_close` where the template quotes strings. A `Lit` may
have holes: text that differs from call to call (a call id, an index), matched loosely; and a
per-key `Lit` may repeat the argument's own name (`KEY`: `<city>Paris</city>`), matched exactly.

Where calls stand alone in a turn (no section around them) and the template closes the turn's
calls with markup of its own (`section_close`, Gemma 4's `<|tool_response>`), that markup is a
trigger too: met alone (after prose) it reads as the end of the turn's calls, no call and no
answer text. A template that writes prose and calls as two turns (Nemotron Nano v2's
`TEXT<SPECIAL_12>\n<SPECIAL_11>Assistant\n<TOOLCALL>…`) has that turn break learned
(`turn_break`): it is a trigger that reads as no call and no text, so text then calls read the
same in either shape. A think block is written between the tags learned from the template
(`think`).

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
from app.templates.calls.markup import ARG_NAME, HOLE, KEY, Lit, Markup


class _More(Exception):
    """The text may still grow into a call."""


class DerivedFormat(CallFormat):
    """A call format learned from a template (see the module docstring)."""

    name: ClassVar[str] = "derived"
    triggers: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        markup: Markup,
        think: tuple[str, str] = ("<think>", "</think>"),
        turn_break: str = "",
    ) -> None:
        self.markup = markup
        self._end = "" if markup.sectioned else markup.section_close.lead().strip()
        self.turn_break = Lit.of(turn_break.strip())
        self._break = self.turn_break.lead().split(None, 1)[0] if turn_break.strip() else ""
        extra = tuple(t for t in (self._end, self._break) if t)
        self.triggers = (markup.trigger(), *extra)  # type: ignore[misc]
        self.ends = (self._end,) if self._end else ()  # type: ignore[misc]
        self.think = think  # type: ignore[misc]
        self._re: dict[tuple[str, str | None], re.Pattern[str]] = {}

    # --- the prompt side (a template renders its own; these are for everything else) ------

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return "".join(tojson(t) + "\n" for t in openai_tools(tools))

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        m = self.markup
        out = [Piece(m.section_open.sample, True)]
        for i, call in enumerate(calls):
            if i:
                again = m.section_open.sample * (not m.sectioned)
                out.append(Piece(m.call_sep.sample + again, True))
            out += [Piece(m.call_open.sample, True), Piece(call.name)]
            out.append(Piece(m.call_mid.sample, True))
            out += self._write_arguments(call)
            out.append(Piece(m.call_close.sample, True))
        out.append(Piece(m.section_close.sample, True))
        out = [p for p in out if p.text]
        if out:  # a turn's calls begin and end at their markup
            out[0] = Piece(out[0].text.lstrip(), out[0].markup)
            out[-1] = Piece(out[-1].text.rstrip(), out[-1].markup)
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
                Piece(m.param_mid.filled(key) + q[0], True),
                Piece(text),
                Piece(q[1] + m.param_close.filled(key), True),
            ]
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(text)]

    def markers(self) -> tuple[str, ...]:
        m = self.markup
        lits = (m.section_open, m.call_open, m.call_close, m.section_close)
        found = {p.strip() for lit in lits for p in lit.parts if KEY not in p}
        return tuple(sorted(t for t in found | set(self.triggers) if t))

    # --- reading ----------------------------------------------------------------------------

    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        if not text.startswith(self.triggers[0]):
            if self._break and text.startswith(self._break):
                return self._turn_break(text, final)
            if self._end and text.startswith(self._end):
                after = self._match(self.markup.section_close, text, 0, True)
                return [], after or len(self._end)  # the end of the turn's calls, after prose
        try:
            calls, end = self._section(text, final)
        except _More:
            if final:
                raise CallSyntaxError("the call markup ends before the call does") from None
            return None
        return calls, end

    def _turn_break(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        """The turn break read as no call (its first word alone when the rest does not follow)."""
        try:
            end = self._match(self.turn_break, text, 0, final)
        except _More:
            return None
        return [], end if end is not None else len(self._break)

    def _rx(self, lit: Lit, key: str | None = None) -> re.Pattern[str]:
        found = self._re.get((lit.text, key))
        if found is None:
            found = self._re[(lit.text, key)] = re.compile(lit.pattern(key), re.DOTALL)
        return found

    def _match(
        self, lit: Lit, text: str, pos: int, final: bool, key: str | None = None
    ) -> int | None:
        """Where `lit` ends when it matches at `pos`; None when it does not; `_More` when the
        text ends inside it."""
        found = self._rx(lit, key).match(text, pos)
        if found is not None and (found.end() < len(text) or final or not lit.text.strip()):
            return found.end()
        rest, lead = text[pos:].strip(), lit.lead().strip()
        if not final and (found is not None or lead.startswith(rest) or rest.startswith(lead)):
            raise _More
        if final and rest and lead.startswith(rest) and len(lit.parts) == 1:
            return len(text)  # the answer ends inside the markup (its end-of-turn a stop token)
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
                raise CallSyntaxError("the call markup is not closed", call.name, pos, tuple(calls))
            pos = nxt

    def _need(self, lit: Lit, text: str, pos: int, final: bool, what: str) -> int:
        end = self._match(lit, text, pos, final)
        if end is None:
            raise CallSyntaxError(f"{what} is not the markup this model's template writes")
        return end

    def _call(self, text: str, pos: int, final: bool) -> tuple[ToolCall, int]:
        m = self.markup
        name, pos = self._name(text, pos, final)
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

    def _name(self, text: str, pos: int, final: bool) -> tuple[str, int]:
        m = self.markup
        follow = (
            f"(?:{m.param_open.pattern()}|{m.call_close.pattern()})" if m.per_key else "\\s*\\{"
        )
        key = ("name" + m.call_mid.text, None)
        rx = self._re.get(key)
        if rx is None:
            pattern = f"\\s*([^\\n]+?){m.call_mid.pattern()}(?={follow})"
            rx = self._re[key] = re.compile(pattern)
        found = rx.match(text, pos)
        if found is None:
            if not final and len(text) - pos < 4096:
                raise _More
            raise CallSyntaxError("the call has no name")
        return found.group(1).strip(), found.end()

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

    def _keyed(self, text: str, pos: int, final: bool, name: str) -> tuple[dict[str, Any], int]:
        """The arguments written one by one from `pos`, and where they end."""
        m = self.markup
        found: dict[str, Any] = {}
        at = pos
        while True:
            start = self._match(m.param_open, text, at, final)
            key = ARG_NAME.match(text, start) if start is not None else None
            if start is None or key is None:
                if not final and start is not None and not text[start:].strip():
                    raise _More
                return found, pos
            value_at = self._match(m.param_mid, text, key.end(), final, key.group())
            if value_at is None:
                return found, pos
            found[key.group()], pos = self._value(text, value_at, final, name, key.group())
            nxt = self._match(m.param_sep, text, pos, final)
            if nxt is None:
                return found, pos
            at = nxt

    def _value(self, text: str, pos: int, final: bool, name: str, key: str) -> tuple[Any, int]:
        m = self.markup
        close = m.param_close.pattern(key)
        if m.quote_open and text.startswith(m.quote_open, pos):
            quoted = f"{re.escape(m.quote_open)}(.*?){re.escape(m.quote_close)}{close}"
            hit = re.compile(quoted, re.DOTALL).match(text, pos)
            if hit is None:
                raise _More if not final else CallSyntaxError("a value is not closed", name)
            return hit.group(1), hit.end()
        after = f"(?:{m.param_sep.pattern()}{m.param_open.pattern()}|{m.call_close.pattern()})"
        hit = re.compile(f"(.*?){close}(?={after})", re.DOTALL).match(text, pos)
        if hit is None:
            raise _More if not final else CallSyntaxError("a value is not closed", name)
        raw = hit.group(1)
        return _typed(raw.strip() if not m.quote_open else raw), hit.end()

    # --- the grammar ------------------------------------------------------------------------

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        from app.templates.calls.derived_grammar import derived_call_rest

        return derived_call_rest(self.markup, self.triggers[0], tools)


def _typed(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return text if isinstance(value, str) else value


__all__ = ["ARG_NAME", "HOLE", "KEY", "DerivedFormat", "Lit", "Markup"]
