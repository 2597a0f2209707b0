"""Text bound for a terminal: no control character can reach it.

Guarantees: `printable` removes every C0 control but tab and newline, DEL, and every C1
control (U+0080–U+009F), so no escape sequence can start — OSC 52 (write the clipboard),
cursor moves, title changes, carriage-return overwrites — whatever the model, a remote server
or an imported file wrote; the visible characters of the text are kept, in order. It is
stateless, so text streamed in pieces is cleaned the same as whole. `TerminalText` applies it
to a text stream, and `protect_terminal` installs it on stdout and stderr when they are
terminals (a pipe or a file still receives exact bytes: JSON and transcripts stay lossless).
"""

from __future__ import annotations

import io
import re
import sys
from typing import TextIO

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without the characters a terminal would act on (see the module docstring)."""
    return _CONTROLS.sub("", text)


class TerminalText(io.TextIOBase):
    """A text stream that passes only `printable` text to the terminal under it."""

    def __init__(self, terminal: TextIO) -> None:
        self.terminal = terminal  # the app's own control sequences (a progress bar) go here

    def write(self, text: str) -> int:
        self.terminal.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self.terminal.flush()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.terminal.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.terminal.encoding


def protect_terminal() -> None:
    """Wrap stdout and stderr in `TerminalText` where they are terminals."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, TerminalText) and stream.isatty():
            setattr(sys, name, TerminalText(stream))


def raw_terminal(stream: TextIO) -> TextIO:
    """The terminal under a protected stream, for the app's own control sequences."""
    return stream.terminal if isinstance(stream, TerminalText) else stream


__all__ = ["TerminalText", "printable", "protect_terminal", "raw_terminal"]
