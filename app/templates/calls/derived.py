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
(`think`). Where the generation prompt ends with markup that opens each call (`opening`,
Functionary's `>>>`, Muse's `<|start|>assistant`), the answer is read as its sequel and the
answer's own header after it (`answer`: `all\n`, ` to=user<|message|>`) reads as no call and no
text; lone calls that are each a message of their own have the markup between them read the
same way; a call's name repeated in its markup (`KEY` in `call_mid`) must be the same name.

Guarantees: `read` takes exactly the text one section of calls holds (whitespace inside the
markup is matched leniently), None while the text may still grow into it, a `CallSyntaxError`
that takes all of a malformed or cut-off call's markup for text that cannot; a per-key value is
JSON where it reads as a non-string JSON value, text otherwise (`derived_read.py`); a held call
is read again only when a piece that may close it comes (`closers`, `reader()`), its markup only
once its closing word is written; `write` gives back text this format reads. It has no
model-specific code: what it knows, it learned from the template (`detect.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from app.domain.messages import ToolDescription
from app.templates.calls.derived_read import HeldCall, MarkupReader, Read, closers_of
from app.templates.calls.format import CallFormat, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import tojson
from app.templates.calls.markup import ARG_NAME, HOLE, KEY, UNITS, Lit, Markup
from app.templates.calls.reading import CallReader


class DerivedFormat(CallFormat):
    """A call format learned from a template (see the module docstring)."""

    name: ClassVar[str] = "derived"
    triggers: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        markup: Markup,
        think: tuple[str, str] = ("<think>", "</think>"),
        turn_break: str = "",
        opening: str = "",
        answer: str = "",
    ) -> None:
        self.markup = markup
        if not turn_break and not markup.sectioned and markup.call_sep.text.strip():
            turn_break = markup.call_sep.text  # each call a message: their ends read as none
            self.separator = markup.call_sep.sample.strip()  # type: ignore[misc]
        self.turn_break = Lit.of(turn_break.strip())
        self._reader = MarkupReader(markup, self.turn_break)
        end, brk = self._reader.end, self._reader.brk
        self.triggers = (markup.trigger(), *(t for t in (end, brk) if t))  # type: ignore[misc]
        self.ends = (end,) if end else ()  # type: ignore[misc]
        self.think = think  # type: ignore[misc]
        self.opening = opening  # type: ignore[misc]
        self.answer = answer  # what the answer's text begins with after the opening
        self.header = opening + answer if opening else ""
        closers = closers_of(markup, self.turn_break)
        self.closers = closers + self.header[-1:] if closers else ""  # type: ignore[misc]

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
            for j, mid in enumerate(m.call_mid.sample.split(KEY)):  # KEY: the name again
                out += [Piece(call.name)] * bool(j) + [Piece(mid, True)]
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
        found |= set(UNITS.findall(m.call_mid.text + self.header))  # `<|…|>` units within
        return tuple(sorted(t for t in found | set(self.triggers) if t))

    # --- reading (`app/templates/calls/derived_read.py`) --------------------------------

    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        headed, read = self.header_read(text, final)
        return read if headed else self._reader.read(text, final)

    def reader(self) -> CallReader:
        """A reader of one held call that reads its markup only once a closing word comes."""
        held = HeldCall(self._reader)
        return _Headed(self, held) if self.header else held

    def header_read(self, text: str, final: bool) -> tuple[bool, Read]:
        """(whether `text` is, or may still grow into, the answer's header, which reads as no
        call and no text; its read)."""
        head = self.header
        if not head:
            return False, None
        if text.startswith(head):
            return True, ([], len(head))
        if final:
            cut = text in (self.opening, head.rstrip())  # the opening alone, or a header cut
            return cut, (([], len(text)) if cut else None)
        return head.startswith(text), None

    # --- the grammar ------------------------------------------------------------------------

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        from app.templates.calls.derived_grammar import derived_call_rest

        return derived_call_rest(self.markup, self.triggers[0], tools, self.opening, self.answer)


class _Headed:
    """A held call's reader that reads the answer's header first (see `header_read`)."""

    def __init__(self, fmt: DerivedFormat, held: HeldCall) -> None:
        self._fmt = fmt
        self._held = held

    def read(self, text: str, final: bool) -> Read:
        headed, read = self._fmt.header_read(text, final)
        return read if headed else self._held.read(text, final)


__all__ = ["ARG_NAME", "HOLE", "KEY", "DerivedFormat", "Lit", "Markup"]
