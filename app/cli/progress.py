"""Progress of a long step (loading a model) on stderr, fit for a terminal and for a pipe.

Guarantees: on a terminal (`isatty()`), a bar redrawn in place with `\\r`, at most once every
`EVERY_S` seconds (and once at 100 %), written to the terminal under the protected stream
(`raw_terminal`) with its label made `printable` first; anywhere else (a pipe, a file, a
service's log) no percentage ever: exactly one line when the step starts (`LABEL…`) and one
when it ends (`end`), or nothing at all for a step made `quiet` there; `abandon` (the step
failed) clears the bar and writes nothing else — the caller says the failure in its own
sentence, on a line of its own.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from app.domain.terminal import printable, raw_terminal

EVERY_S = 0.1  # at most ten redraws a second
WIDTH = 24  # the bar's cells


class Progress:
    """One step's progress (see the module guarantees); call it with the fraction done."""

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        *,
        quiet: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = printable(label)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(self.stream.isatty())
        self.quiet = quiet and not self.tty
        self.clock = clock
        self.started_at: float | None = None
        self._drawn_at: float | None = None
        self._drawn = -1.0
        self._width = 0  # of the longest bar drawn, to clear it

    @property
    def elapsed(self) -> float:
        """Seconds since the step started (0 before)."""
        return 0.0 if self.started_at is None else self.clock() - self.started_at

    def start(self) -> None:
        """The step starts: its line (elsewhere) or an empty bar (a terminal); once."""
        if self.started_at is not None:
            return
        self.started_at = self.clock()
        if self.tty:
            self._draw(0.0)
        elif not self.quiet:
            self._write(f"{self.label}…\n")

    def __call__(self, fraction: float) -> None:
        self.start()
        if not self.tty:
            return
        fraction = min(max(fraction, 0.0), 1.0)
        now = self.clock()
        if fraction >= 1.0:
            if self._drawn < 1.0:
                self._draw(fraction)
        elif self._drawn_at is None or now - self._drawn_at >= EVERY_S:
            self._draw(fraction)

    def end(self, text: str) -> None:
        """The step is done: `text` is its last line (the bar's place on a terminal)."""
        if self.quiet:
            return
        line = printable(text)
        self._write(f"\r{line.ljust(self._width)}\n" if self.tty else f"{line}\n")
        self._width = 0

    def abandon(self) -> None:
        """The step failed: clear the bar; the caller says why."""
        if self.tty and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _draw(self, fraction: float) -> None:
        filled = round(fraction * WIDTH)
        bar = f"{self.label} [{'#' * filled}{'-' * (WIDTH - filled)}] {fraction:4.0%}"
        self._write("\r" + bar.ljust(self._width))
        self._width = max(self._width, len(bar))
        self._drawn_at, self._drawn = self.clock(), fraction

    def _write(self, text: str) -> None:
        out = raw_terminal(self.stream) if self.tty else self.stream
        out.write(text)
        out.flush()


__all__ = ["EVERY_S", "Progress"]
