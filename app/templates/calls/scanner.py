"""Finds a format's tool calls in streamed answer text.

Guarantees: text is passed on as soon as it cannot be the start of a call; from where a
trigger begins (or a tail that may still grow into one) it is held back, so call markup never
reaches the answer; a held call is handed on when the format reads it whole, as a notice when
the format says it can never be valid (never dropped, never run); at `finish` whatever is held
is read as the end of the answer (a call without its closing tag still counts). A held call is
read again only when new text holds one of the format's `closers`, by a reader of its own when
the format gives one (`Resumable`: it may remember how far it read), and, where that reader is
`Waking`, only when it says the text may have completed the call. Whitespace
between calls, and after the last one, is not answer text. No text is ever lost: every
character fed comes back as text, in a call, or in an invalid call's `raw`, save a marker the
format reads as the end of a turn that calls (a read of no calls: Gemma 4's `<|tool_response>`).
A `leading` trigger begins a call only where the answer begins (past blank space) or right
after a call; anywhere else it is answer text. A format's `opening` (what the generation prompt
ends with) is held first, as if it had been fed. `feed_call` gives a held call its text and
hands back, unread, what follows the call's end (the text parser reads think tags there, never
inside a call). Held text the format reads as no call after all (`NotACall`) is answer text,
handed on whole, and scanning goes on after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.domain.events import ParseIssue, Severity
from app.errors import ErrorCode
from app.templates.calls.format import CallFormat, CallSyntaxError, NotACall, ToolCall
from app.templates.calls.reading import CallReader, Resumable


@dataclass(frozen=True)
class Scanned:
    """Calls read from the answer, or markup that is no valid call (`invalid` says why, `raw`
    holds it, `name` the tool when it could be read). Answer text comes as plain `str`."""

    calls: tuple[ToolCall, ...] = ()
    invalid: str = ""
    raw: str = ""
    name: str = ""


class CallScanner:
    """Streams one answer through a format (see the module guarantees)."""

    def __init__(self, fmt: CallFormat) -> None:
        self.format = fmt
        self._buf = fmt.opening  # the prompt ended with it: the answer is read as its sequel
        self._in_call = False
        self._after_call = False
        self._anywhere = tuple(t for t in fmt.triggers if t not in fmt.leading)
        self._start = bool(fmt.leading)  # no answer text yet: a leading trigger may come
        self.firsts = frozenset(t[0] for t in self._anywhere)  # what a call can start with
        self.first = next(iter(self.firsts)) if len(self.firsts) == 1 else ""  # the one, if so
        self.idle = not (self._start or self._buf)  # nothing held: `passes` may let text by
        self._closers = frozenset(fmt.closers)  # none: any text may complete a held call
        self._closer = fmt.closers[:1] if len(self._closers) == 1 else ""  # the one, if so
        few = (*self._closers, *self._closers)[:3]  # two or three, as three
        self._few = (few[0], few[1], few[2]) if len(self._closers) in (2, 3) else None
        self._fresh = _reader_of(fmt)
        self._reader: CallReader = fmt  # what reads the held call (one per call when resumable)
        self._wakes: Callable[[str], bool] | None = None  # its `Waking.wakes`, where it has one

    @property
    def in_call(self) -> bool:
        return self._in_call

    def passes(self, text: str) -> bool:
        """Whether `text` is answer text as it stands: nothing is held and nothing in it may
        start a call (the common case, decided without a copy)."""
        return self.idle and self.firsts.isdisjoint(text)

    def feed(self, text: str) -> list[str | Scanned]:
        if not self._in_call:
            if self.idle and self.firsts.isdisjoint(text):
                return [text]
            self._buf += text
            return self._scan(final=False)
        out, ended = self._grow(text)
        return out + self._scan(final=False) if ended else out

    def feed_call(self, text: str) -> tuple[list[str | Scanned], str]:
        """Text while a call is held (`in_call`): what came of it, and, once the call ended,
        the text after its end, not taken (the caller reads it as any text, then `feed`s it)."""
        out, ended = self._grow(text)
        if not ended:
            return out, ""
        rest, self._buf = self._buf, ""
        self.idle = not (self._after_call or self._start)
        return out, rest

    def _grow(self, text: str) -> tuple[list[str | Scanned], bool]:
        """The held call's text grown by `text`: what came of it, and whether the call ended
        (the text after its end left in the buffer)."""
        self._buf += text
        one = self._closer  # (`in` is the quicker test than a set's, for up to three)
        if one:
            if one not in text:
                return [], False  # it cannot have completed the held call
        elif (few := self._few) is not None:
            a, b, c = few
            if a not in text and b not in text and c not in text:
                return [], False
        elif self._closers and self._closers.isdisjoint(text):
            return [], False
        wakes = self._wakes
        if wakes is not None and not wakes(self._buf):
            return [], False  # its reader says a read would find it still open
        out: list[str | Scanned] = []
        return out, self._read(False, out)  # (still open: the common case, without a scan)

    def finish(self) -> list[str | Scanned]:
        return self._scan(final=True)

    def _scan(self, final: bool) -> list[str | Scanned]:
        out = self._scanned(final)
        self.idle = not (self._buf or self._in_call or self._after_call or self._start)
        return out

    def _scanned(self, final: bool) -> list[str | Scanned]:
        out: list[str | Scanned] = []
        while self._buf:
            if self._in_call:
                if not self._read(final, out):
                    break
                continue
            if self._after_call:
                stripped = self._buf.lstrip()
                if not stripped and not final:
                    break
                self._buf = stripped
                if not stripped:
                    break
            at = self._trigger_at(self._buf)
            if at is not None:
                self._text(self._buf[:at], out)
                self._buf, self._in_call = self._buf[at:], True
                self._start_call()
                continue
            keep = 0 if final else self._held(self._buf)
            self._text(self._buf[: len(self._buf) - keep], out)
            self._buf = self._buf[len(self._buf) - keep :]
            break
        return out

    def _start_call(self) -> None:
        """A reader for the call that begins at the held text (the format's own, or one of
        its own when the format is resumable, and how it says it may be complete)."""
        if self._fresh is None:
            self._reader, self._wakes = self.format, None
            return
        self._reader = self._fresh()
        self._wakes = getattr(self._reader, "wakes", None)  # `reading.Waking`, where it is one

    def _text(self, text: str, out: list[str | Scanned]) -> None:
        if text:
            out.append(text)
            self._after_call = False
            self._start = self._start and text.isspace()

    def _read(self, final: bool, out: list[str | Scanned]) -> bool:
        """Read the held call; False while it needs more text."""
        try:
            read = self._reader.read(self._buf, final)
        except NotACall as exc:  # answer text after all (and no trigger where it begins)
            n = max(1, min(exc.length, len(self._buf)))
            self._in_call = False
            self._text(self._buf[:n], out)
            self._buf = self._buf[n:]
            return True
        except CallSyntaxError as exc:
            n = len(self._buf) if exc.length is None else max(1, exc.length)
            if exc.calls:  # whole calls before the bad part stand
                out.append(Scanned(calls=exc.calls))
            out.append(Scanned(invalid=exc.message, raw=self._buf[:n], name=exc.name))
            self._buf, self._in_call, self._after_call = self._buf[n:], False, True
            return True
        if read is None:
            return False
        calls, n = read
        if calls:  # none: an end-of-turn marker the format reads as the end of its calls
            out.append(Scanned(calls=tuple(calls), raw=self._buf[:n]))
        self._buf, self._in_call, self._after_call = self._buf[n:], False, True
        return True

    def _trigger_at(self, text: str) -> int | None:
        found = [at for t in self._anywhere if (at := text.find(t)) >= 0]
        if self._start or self._after_call:
            lead = len(text) - len(text.lstrip())
            found += [lead for t in self.format.leading if text.startswith(t, lead)]
        return min(found) if found else None

    def _held(self, text: str) -> int:
        """How many trailing characters could still grow into a trigger."""
        best = 0
        if self._start or self._after_call:
            rest = text.lstrip()
            if rest and any(t.startswith(rest) for t in self.format.leading):
                best = len(rest)
        for t in self._anywhere:
            for n in range(min(len(t) - 1, len(text)), best, -1):
                if t.startswith(text[-n:]):
                    best = n
                    break
        return best


def _reader_of(fmt: CallFormat) -> Callable[[], CallReader] | None:
    """The format's `reader` when it is `Resumable` (asked of its class once: a protocol's
    `isinstance` costs more than a whole answer's reading)."""
    kind = type(fmt)
    found = _RESUMABLE.get(kind)
    if found is None:
        found = _RESUMABLE[kind] = isinstance(fmt, Resumable)
    return fmt.reader if found else None  # type: ignore[attr-defined]


_RESUMABLE: dict[type, bool] = {}


def invalid_call(piece: Scanned) -> ParseIssue:
    """What the reply says of markup that is no valid call (it was not run), with the markup
    itself as the issue's `raw`."""
    who = f"call {piece.name}" if piece.name else "call a tool"
    said = (
        f"The model tried to {who}; the call was not valid: {piece.invalid}."
        f" It was not run. What it wrote: {piece.raw[:400]}"
    )
    return ParseIssue(ErrorCode.CALL_SCHEMA, said, Severity.ERROR, raw=piece.raw)
