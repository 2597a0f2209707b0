"""Reading a held call without reading it again from its start on every piece of text.

A scanner holds a call's text from its trigger on and asks the format to read it each time a
piece that may complete it arrives; read afresh every time, a long call (a block of several
calls, a chain of JSON objects) costs the square of its length. The searches a format's reader
makes are therefore asked of a `Scan`: `Scan` searches afresh (what `CallFormat.read` uses, on
any text), `Memo` remembers how far each search got, for one held call, whose text only grows
at its end between reads (what a `Remembering` format's `reader()` uses, one per held call).
A format that finds a call open may say what must come before it can be anything else
(`wait_for`: a closing tag); a held call's reader reads it again only once that comes, and
says so more cheaply than a read (`Waking.wakes`, which a scanner asks first: a piece with a
closer character that cannot end the call, Gemma 4's `<|"|>` quote, costs no read).

Guarantees: for text that only grows at its end, `Memo` answers every search exactly as `Scan`
does, so a format reads the same calls, lengths and errors through either; `json_end` scans a
JSON value's text once in all (strings skipped whole, brackets counted), `find` searches each
character once per needle and start; a reader skips a read only where the format said the read
would find the call open, and `wakes` is False only where that read would be skipped.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from app.templates.calls.format import ToolCall

Read = tuple[list[ToolCall], int] | None  # what a format's `read` returns

# up to a bracket or a string that does not close: whole strings skipped in one step
_OUTSIDE = re.compile(r'(?:[^"{}\[\]]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)
_INSIDE = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)  # a string's body, to its end


class JsonEnd:
    """Where the JSON object or array opening at `start` ends, read as its text grows: each
    call scans only what came since the last (brackets inside strings do not count)."""

    def __init__(self, start: int) -> None:
        self._pos = start
        self._depth = 0
        self._in_string = False
        self._end: int | None = None

    def end(self, text: str) -> int | None:
        """Past the value's closing bracket; None while it is still open."""
        if self._end is None and self._pos < len(text):
            self._scan(text)
        return self._end

    def _scan(self, text: str) -> None:
        pos, depth, n = self._pos, self._depth, len(text)
        while pos < n:
            if self._in_string:  # a string still open when the text last ended
                pos = _INSIDE.match(text, pos).end()  # type: ignore[union-attr]
                if pos == n or text[pos] != '"':
                    break  # still open (or a backslash ends the text: read it again)
                self._in_string, pos = False, pos + 1
            pos = _OUTSIDE.match(text, pos).end()  # type: ignore[union-attr]
            if pos == n:
                break
            c, pos = text[pos], pos + 1
            if c == '"':
                self._in_string = True  # it does not close yet
            elif c in "{[":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    self._end = pos
                    break
        self._pos, self._depth = pos, depth


def json_end(text: str, start: int) -> int | None:
    """Where the JSON object or array opening at `text[start]` ends (past its closing
    bracket); None while it is still open. Brackets inside strings do not count."""
    return JsonEnd(start).end(text)


class Scan:
    """A format's searches in a held call's text, made afresh (any text, every time)."""

    def json_end(self, text: str, start: int) -> int | None:
        """As `json_end`."""
        return json_end(text, start)

    def find(self, text: str, needle: str, start: int = 0) -> int:
        """As `text.find(needle, start)`."""
        return text.find(needle, start)

    def recall(self, key: object) -> Any:
        """What `remember` kept under `key`; None when nothing was."""
        return None

    def remember(self, key: object, value: object) -> None:
        """Keep `value`, read from text that more text does not change (`key` names it: where
        it was read from)."""

    def wait_for(self, text: str, *needles: str) -> None:
        """Say that the reading of `text` found the call open, and that more text cannot
        complete it (nor make it an error) until one of `needles` comes after it."""


class Memo(Scan):
    """Searches that remember how far they got, for one held call whose text only grows at its
    end between them (see the module guarantees)."""

    def __init__(self) -> None:
        self._json: dict[int, JsonEnd] = {}
        self._hits: dict[tuple[str, int], int] = {}
        self._upto: dict[tuple[str, int], int] = {}
        self._values: dict[object, object] = {}
        self._awaited: tuple[str, ...] = ()  # the needles `wait_for` named (none: not waiting)
        self._look_from = 0  # where one of them not yet looked for may begin
        self._overlap = 0  # how far back of the text's end that is (the longest needle's - 1)

    def json_end(self, text: str, start: int) -> int | None:
        scan = self._json.get(start)
        if scan is None:
            scan = self._json[start] = JsonEnd(start)
        return scan.end(text)

    def find(self, text: str, needle: str, start: int = 0) -> int:
        key = (needle, start)
        at = self._hits.get(key)
        if at is not None:
            return at
        at = text.find(needle, self._upto.get(key, start))
        if at >= 0:
            self._hits[key] = at
        else:  # a needle split at the end is found next time
            self._upto[key] = max(start, len(text) - len(needle) + 1)
        return at

    def recall(self, key: object) -> Any:
        return self._values.get(key)

    def remember(self, key: object, value: object) -> None:
        self._values[key] = value

    def wait_for(self, text: str, *needles: str) -> None:
        self._awaited, self._overlap = needles, max(map(len, needles), default=1) - 1
        self._look_from = max(0, len(text) - self._overlap)

    def waiting(self, text: str) -> bool:
        """Whether the held call still waits (see `wait_for`): none of the needles it
        awaits has come since."""
        return not self.woken(text)

    def woken(self, text: str) -> bool:
        """`not waiting(text)`, in one look at what came since it last looked: whether a read
        of `text` may find the call anything but open (True until the next `wait_for`, once a
        needle came)."""
        needles = self._awaited
        if not needles:
            return True
        since = text[self._look_from :]
        for needle in needles:
            if needle in since:
                self._awaited = ()
                return True
        after = len(text) - self._overlap
        if after > self._look_from:
            self._look_from = after
        return False


class CallReader(Protocol):
    """Reads one held call as its text grows (what `CallFormat.read` promises)."""

    def read(self, text: str, final: bool) -> Read: ...


class Waking(Protocol):
    """A held call's reader that says, more cheaply than a read, whether the text grown since
    its last read may have completed the call: `wakes(text)` is False only where `read(text,
    False)` would find it still open (it may remember how far it looked, as the read would)."""

    def wakes(self, text: str) -> bool: ...


@runtime_checkable
class Resumable(Protocol):
    """A format that gives a reader for each held call (which may remember how far it got)."""

    def reader(self) -> CallReader: ...


class _Bound:
    """A `Remembering` format's reading of one held call, with its own `Memo`."""

    def __init__(self, read_with: Callable[[str, bool, Scan], Read]) -> None:
        self._read_with = read_with
        self._memo = Memo()
        self.wakes: Callable[[str], bool] = self._memo.woken  # `Waking`, at no extra call

    def read(self, text: str, final: bool) -> Read:
        memo = self._memo
        if not final and memo._awaited and not memo.woken(text):
            return None  # what it waits for has not come: the call is still open
        return self._read_with(text, final, memo)


AFRESH = Scan()


class Remembering:
    """A format whose reading makes its searches through a `Scan` (`read_with`): `read` reads
    afresh, `reader()` a held call with a `Memo` of its own."""

    def read(self, text: str, final: bool) -> Read:
        return self.read_with(text, final, AFRESH)

    def reader(self) -> CallReader:
        return _Bound(self.read_with)

    @abstractmethod
    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        """`CallFormat.read`, its searches made through `scan`."""
