"""The terminal chat's notices: what the reply says beside the model's words, printed as the
window shows it on the reply (an echoed tool result taken out of the answer, a tool call the
model wrote as text, too many calls in one turn).

Guarantees: `TerminalNotices(reply, stream)` followed with each of a turn's events (after the
reply's builder has applied it) prints each notice segment the turn adds to `reply`, once, in
order, as one line on `stream` (stderr: stdout keeps only the answer): `! ` and its words, with
every run of whitespace (a newline of a quoted result) made one space and every control
character taken out (`app/domain/terminal.py::printable`), so no text in a notice can act on
the terminal; on a terminal the line is dim (SGR 2 then 22, the app's own sequences, written
under the protected stream) unless `NO_COLOR` is set; anywhere else it is plain. What the
terminal already says in its own words (`app/cli/terminal_reply.py`) is not said twice: a
parse problem's message, what the overflow policy left out or cut, a compaction. Notices the
reply held before the turn are not printed.
"""

from __future__ import annotations

import os
from typing import TextIO

from app.domain.budget import notice
from app.domain.events import ContextFit, ParseIssue, Severity, TurnEvent
from app.domain.history import Reply, Segment
from app.domain.terminal import printable, raw_terminal

DIM, UNDIM = "\x1b[2m", "\x1b[22m"
MARK = "! "


def notice_line(words: str) -> str:
    """A notice's words as the one line the terminal prints (without its end)."""
    return MARK + " ".join(printable(words).split())


class TerminalNotices:
    """Prints one turn's notices (see the module guarantees); call it with each event."""

    def __init__(self, reply: Reply, stream: TextIO) -> None:
        self.reply, self.stream = reply, stream
        self._next = len(reply.segments)  # the first segment this turn may add
        self._said: set[str] = set()  # notices the terminal said in its own words

    def __call__(self, event: TurnEvent) -> None:
        self._note(event)
        added = self.reply.segments[self._next :]
        self._next = len(self.reply.segments)
        for segment in added:
            if self._prints(segment):
                self._print(notice_line(segment.text))

    def _note(self, event: TurnEvent) -> None:
        """What the terminal says of `event` in its own words (see `terminal_reply.py`)."""
        if isinstance(event, ParseIssue) and event.severity is not Severity.DEBUG:
            self._said.add(event.message)
        elif isinstance(event, ContextFit):
            self._said.add(notice(event.policy, event.exchanges, event.dropped, event.cuts))

    def _prints(self, segment: Segment) -> bool:
        # a compaction's notice carries its record; the terminal says it as "[compacted: …]"
        said = segment.text in self._said or "compaction" in segment.data
        return segment.kind == "notice" and bool(segment.text.strip()) and not said

    def _print(self, line: str) -> None:
        tty = bool(self.stream.isatty())
        dim = tty and not os.environ.get("NO_COLOR")
        out = raw_terminal(self.stream) if tty else self.stream
        out.write(f"{DIM}{line}{UNDIM}\n" if dim else f"{line}\n")
        out.flush()


__all__ = ["TerminalNotices", "notice_line"]
