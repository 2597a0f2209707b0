"""Reading a learned format's calls: `MarkupReader` reads one section of calls from text that
begins at its trigger; `HeldCall` reads one held call as the scanner's text grows.

Guarantees: `MarkupReader.read` takes exactly the text one section of calls holds (whitespace
inside the markup is matched leniently), None while the text may still grow into it, a
`CallSyntaxError` for text that cannot. No call is whole before the last word of the markup that
closes it (`closing`) is written, so until then, short of the end, it reads None without
reading the markup. A malformed or cut-off call is one error that takes all of its markup:
through the first closing word after where the call began (where a call ends with its JSON
object, through the `}` that balances its braces), or all of the text when none follows (whole
calls before it in its section stand). A per-key value is JSON where it reads as
a non-string JSON value, text otherwise.

`HeldCall.read` answers as `MarkupReader.read` on text that only grows at its end between
reads, but reads the markup again only when a closing word it has not met arrives (or at the
end): a call whose markup is whole once its closing word is written cannot be completed by
text without one; the search for it looks at each character once (the last few again, where a
word may be split across pieces). `HeldCall.wakes` makes that search alone, so a scanner asks
it before reading (a piece that holds the closing word's last character but not the word, a
`>` of the markup inside, costs no read).
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from app.templates.calls.format import CallSyntaxError, ToolCall
from app.templates.calls.hermes import tojson
from app.templates.calls.markup import ARG_NAME, Lit, Markup

Read = tuple[list[ToolCall], int] | None


_DECODER = json.JSONDecoder()
_JSON_STARTS = frozenset('-0123456789[{"tfnNI \t\n\r')  # as `json.loads` may read them


class _More(Exception):
    """The text may still grow into a call."""


class _Compiled(NamedTuple):
    """A `Lit` ready to match: its pattern, its literal lead, whether it has no holes."""

    rx: re.Pattern[str]
    lead: str
    single: bool


def closing_word(markup: Markup) -> str:
    """The last word of the markup that closes a section of calls ("" when it has none: the
    markup ends with a hole, or writes nothing)."""
    close = markup.section_close if markup.sectioned else markup.call_close
    words = close.parts[-1].split()
    return words[-1] if words else ""


def closers_of(markup: Markup, turn_break: Lit) -> str:
    """The characters without which a piece cannot complete a held call ("": any may): the
    last of the closing word, of the markup that closes a turn of lone calls and of the turn
    break, where there are; a JSON object's `}` where lone calls end with their arguments."""
    closing = closing_word(markup)
    if not closing and not (markup.per_key or markup.sectioned or markup.call_close.text.strip()):
        closing = "}"
    end = "" if markup.sectioned else markup.section_close.lead().strip()
    return closing[-1:] + end[-1:] + turn_break.text.strip()[-1:] if closing else ""


class MarkupReader:
    """Reads a learned format's calls (see the module guarantees)."""

    def __init__(self, markup: Markup, turn_break: Lit) -> None:
        self.markup = markup
        self.trigger = markup.trigger()
        self.closing = closing_word(markup)
        self._braced = self.closing == "}" or closers_of(markup, Lit()) == "}"
        # where calls stand alone, the markup that closes the turn's calls reads alone too
        self.end = "" if markup.sectioned else markup.section_close.lead().strip()
        self.turn_break = turn_break
        self.brk = turn_break.lead().split(None, 1)[0] if turn_break.text.strip() else ""
        self._re: dict[tuple[int, str | None], _Compiled] = {}
        self._lits: list[Lit] = []
        self._values: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}
        self._name_rx = self._name_pattern()
        self._fast = self._fast_pattern()
        self._sectioned = markup.sectioned
        self._sep = bool(markup.param_sep.text)  # none: the next argument follows at once

    def read(self, text: str, final: bool) -> Read:
        """The calls at the start of `text` and the length they took (see the guarantees)."""
        if not text.startswith(self.trigger):
            if self.brk and text.startswith(self.brk):
                return self._turn_break(text, final)
            if self.end and text.startswith(self.end):
                after = self._match(self.markup.section_close, text, 0, True)
                return [], after or len(self.end)  # the end of the turn's calls, after prose
        if not final and self.closing and text.find(self.closing, len(self.trigger)) < 0:
            return None
        return self.parse(text, final)

    def parse(self, text: str, final: bool) -> Read:
        """`read` of a section of calls, its markup read whether or not it is closed."""
        try:
            return self._section(text, final)
        except _More:
            if final:
                raise CallSyntaxError("the call markup ends before the call does") from None
            return None

    def _turn_break(self, text: str, final: bool) -> Read:
        """The turn break read as no call (its first word alone when the rest does not follow)."""
        try:
            end = self._match(self.turn_break, text, 0, final)
        except _More:
            return None
        return [], end if end is not None else len(self.brk)

    # --- markup ---------------------------------------------------------------------------

    def _compiled(self, lit: Lit, key: str | None) -> _Compiled:
        found = self._re.get((id(lit), key))
        if found is None:
            rx = re.compile(lit.pattern(key), re.DOTALL)
            found = _Compiled(rx, lit.lead().strip(), len(lit.parts) == 1)
            self._re[(id(lit), key)] = found
            self._lits.append(lit)  # its id names it only while it lives
        return found

    def _match(
        self, lit: Lit, text: str, pos: int, final: bool, key: str | None = None
    ) -> int | None:
        """Where `lit` ends when it matches at `pos` (whitespace it ends with may be cut off by
        the end of the text: whitespace after calls is no answer text); None when it does not
        match; `_More` when the text ends inside it."""
        c = self._compiled(lit, key)
        found = c.rx.match(text, pos)
        if found is not None:
            return found.end()
        rest, lead = text[pos:].strip(), c.lead
        if not final and (lead.startswith(rest) or rest.startswith(lead)):
            raise _More
        if final and rest and lead.startswith(rest) and c.single:
            return len(text)  # the answer ends inside the markup (its end-of-turn a stop token)
        return None

    def _need(self, lit: Lit, text: str, pos: int, final: bool, what: str) -> int:
        end = self._match(lit, text, pos, final)
        if end is None:
            raise CallSyntaxError(f"{what} is not the markup this model's template writes")
        return end

    def _bad(
        self, exc: CallSyntaxError, text: str, start: int, calls: list[ToolCall]
    ) -> CallSyntaxError:
        """`exc` taking all of the bad call's markup, which began at `start`."""
        return CallSyntaxError(exc.message, exc.name, self._extent(text, start), tuple(calls))

    def _extent(self, text: str, start: int) -> int | None:
        """Where a bad call's markup that began at `start` ends (None: with the text): past
        the `}` that balances its braces where a call ends with its JSON, else past the first
        closing word."""
        if self._braced:
            return balanced(text, start)
        at = text.find(self.closing, start) if self.closing else -1
        return at + len(self.closing) if at >= 0 else None

    # --- calls ----------------------------------------------------------------------------

    def _section(self, text: str, final: bool) -> tuple[list[ToolCall], int]:
        m = self.markup
        pos = self._need(m.section_open, text, 0, final, "its opening") if self._sectioned else 0
        calls: list[ToolCall] = []
        while True:
            start = pos
            try:
                pos = self._need(m.call_open, text, pos, final, "a call's opening")
                call, pos = self._call(text, pos, final)
            except CallSyntaxError as exc:
                raise self._bad(exc, text, start, calls) from None
            calls.append(call)
            if not self._sectioned:
                return calls, self._past_close(text, pos, final)
            after = self._match(m.section_close, text, pos, final)
            if after is not None and (m.section_close.text.strip() or pos >= len(text.rstrip())):
                return calls, after
            nxt = self._match(m.call_sep, text, pos, final)
            if nxt is None or self._match(m.call_open, text, nxt, final) is None:
                if final and not text[pos:].strip():
                    return calls, len(text)  # the closing markup was cut off
                bad = CallSyntaxError("the call markup is not closed", call.name)
                raise self._bad(bad, text, pos, calls)
            pos = nxt

    def _past_close(self, text: str, pos: int, final: bool) -> int:
        """Past the markup that closes a turn of lone calls, where it follows at once (where it
        comes later, after blank space, it reads alone: it is a trigger)."""
        try:
            return self._match(self.markup.section_close, text, pos, final) or pos
        except _More:
            if text[pos:].strip():
                raise  # the start of that markup: what follows says whether it is
            return pos

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
                raise CallSyntaxError("the call is not closed", name)
        return ToolCall(name, tojson(arguments)), end

    def _name_pattern(self) -> re.Pattern[str]:
        m = self.markup
        follow = (
            f"(?:{m.param_open.pattern()}|{m.call_close.pattern()})" if m.per_key else "\\s*\\{"
        )
        mid = m.call_mid.pattern(named="(?P=n)")  # where it repeats the name, the same name
        return re.compile(f"\\s*(?P<n>[^\\n]+?){mid}(?={follow})")

    def _name(self, text: str, pos: int, final: bool) -> tuple[str, int]:
        found = self._name_rx.match(text, pos)
        if found is None:
            if not final and self._may_grow(text, pos):
                raise _More
            raise CallSyntaxError("the call has no name")
        return found.group(1).strip(), found.end()

    def _may_grow(self, text: str, pos: int) -> bool:
        """Whether markup not read from `pos` may still be completed by more text: no closing
        word follows yet (a long run of text with none, when the markup has none)."""
        if self.closing:
            return text.find(self.closing, pos) < 0
        return len(text) - pos < 4096

    # --- arguments ------------------------------------------------------------------------

    def _json(self, text: str, pos: int, final: bool, name: str) -> tuple[Any, int]:
        start = len(text) - len(text[pos:].lstrip())
        try:
            value, end = _DECODER.raw_decode(text, start)
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
        while self._fast is not None and (hit := self._fast.match(text, at)) is not None:
            found[hit["k"]], pos = _typed(hit["v"].strip()), hit.end()
            nxt = self._match(m.param_sep, text, pos, final) if self._sep else pos
            if nxt is None:
                return found, pos
            at = nxt
        while True:  # what the one pattern does not take, read step by step
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
        quoted, bare = self._value_rx(key)
        quotes = bool(m.quote_open) and text.startswith(m.quote_open, pos)
        hit = (quoted if quotes else bare).match(text, pos)
        if hit is None:
            raise _More if not final else CallSyntaxError("a value is not closed", name)
        if quotes:
            return hit.group(1), hit.end()
        raw = hit.group(1)
        return _typed(raw.strip() if not m.quote_open else raw), hit.end()

    def _fast_pattern(self) -> re.Pattern[str] | None:
        """One argument (unquoted) as one pattern: what `_keyed` reads step by step, the same
        way (each step's markup atomic, as a match of its own), so both read it alike."""
        m = self.markup
        if not m.per_key or m.quote_open:
            return None
        k = "(?P=k)"
        after = f"(?:{m.param_sep.pattern()}{m.param_open.pattern()}|{m.call_close.pattern()})"
        return re.compile(
            f"(?>{m.param_open.pattern()})(?P<k>[\\w.\\-]++)(?>{m.param_mid.pattern(named=k)})"
            f"(?P<v>.*?){m.param_close.pattern(named=k)}(?={after})",
            re.DOTALL,
        )

    def _value_rx(self, key: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """(a quoted value, a bare one) of argument `key`, each up to its closing markup."""
        found = self._values.get(key)
        if found is None:
            m = self.markup
            close = m.param_close.pattern(key)
            quote = f"{re.escape(m.quote_open)}(.*?){re.escape(m.quote_close)}{close}"
            after = f"(?:{m.param_sep.pattern()}{m.param_open.pattern()}|{m.call_close.pattern()})"
            bare = f"(.*?){close}(?={after})"
            found = self._values[key] = (re.compile(quote, re.DOTALL), re.compile(bare, re.DOTALL))
        return found


class HeldCall:
    """One held call read as its text grows (see the module guarantees)."""

    def __init__(self, reader: MarkupReader) -> None:
        self._reader = reader
        self._afresh: bool | None = None  # read afresh each time (known at the first read)
        # the words that may complete the call (the closing word, and the markup that closes
        # a turn of lone calls, which may follow it), and where one not yet met may begin
        words = tuple(w for w in (reader.closing, reader.end) if w) or ("",)
        self._words = (words[0], words[-1])  # (one word twice where there is one)
        self._overlap = max(map(len, words)) - 1  # how far back of the end one may begin
        self._from = len(reader.trigger)
        self._due = False  # `wakes` met a word the next read has not parsed yet

    def wakes(self, text: str) -> bool:
        """Whether a read of `text` may find the call complete (`reading.Waking`): a closing
        word came since the last read (any text may, before the first or when read afresh)."""
        if self._afresh is not False or self._due:
            return True
        self._due = self._met(text)
        return self._due

    def read(self, text: str, final: bool) -> Read:
        if self._afresh is None:  # a turn break, an end marker or markup with no closing word
            r = self._reader
            self._afresh = not r.closing or not text.startswith(r.trigger)
        if final or self._afresh:
            return self._reader.read(text, final)
        due, self._due = self._due or self._met(text), False
        return self._reader.parse(text, final) if due else None

    def _met(self, text: str) -> bool:
        """Whether one of `_words` was written since the last look (a look at each character
        once, a word split across the end found once it is whole)."""
        since = text[self._from :]
        after = len(text) - self._overlap
        if after > self._from:
            self._from = after
        first, last = self._words
        return first in since or last in since


def balanced(text: str, start: int) -> int | None:
    """Past the `}` after `start` that closes every `{` opened from `start` (braces in JSON
    strings do not count); None when the text ends first."""
    depth = 0
    for found in _BRACES.finditer(text, start):
        token = found.group()
        if token[0] != '"':
            depth += 1 if token == "{" else -1
            if depth <= 0:
                return found.end()
    return None


_BRACES = re.compile(r'"(?:[^"\\]|\\.)*"|[{}]', re.DOTALL)


def _typed(text: str) -> Any:
    if text[:1] not in _JSON_STARTS:
        return text  # no JSON value starts so: text as it is
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return text if isinstance(value, str) else value


__all__ = ["HeldCall", "MarkupReader", "closers_of", "closing_word"]
