"""What a learned call format is and how sure the app is of it.

`LearnedPythonic` is the pythonic reader (`Pythonic`) between markers learned from a template;
`Learning` is the record `detect` keeps of a learned format: its markers, how it writes
arguments, and which probes it read back (`checked`), could not check because the template
cannot render them (`unchecked`) or rendered but did not read back as written (`failed`), each
with why; `confidence` follows from them and `describe` is the line `templates show` prints.

Guarantees: a `Learning` only exists for a format that read back every probe call the template
could render (one call, two arguments, a number, two calls where allowed): the format is used
only then. Its confidence is "high" when every probe read back, "medium" when some could not
be rendered, "low" when the template rendered one (prose beside a call, a tool result) that
did not come back as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.templates.calls.derived import DerivedFormat
from app.templates.calls.format import CallFormat
from app.templates.calls.learn import PythonicMarkup
from app.templates.calls.markup import KEY, Markup
from app.templates.calls.pythonic import Pythonic

ONE, TWO_ARGS, NUMBER, TWO_CALLS = "one call", "two arguments", "a number", "two calls"
PROSE, RESULT = "prose then a call", "a tool result"
PROBES = (ONE, TWO_ARGS, NUMBER, TWO_CALLS, PROSE, RESULT)
THINK = ("<think>", "</think>")


class LearnedPythonic(Pythonic):
    """A pythonic call list between the markers a template was seen to write."""

    name = "derived"

    def __init__(self, markup: PythonicMarkup, think: tuple[str, str] = THINK) -> None:
        self.open = markup.open  # type: ignore[misc]
        self.close = markup.close  # type: ignore[misc]
        self.triggers = (markup.open,)  # type: ignore[misc]
        self.closers = markup.close[-1:]  # type: ignore[misc]
        self.think = think  # type: ignore[misc]


def learned_format(
    markup: Markup | PythonicMarkup,
    think: tuple[str, str] = THINK,
    turn_break: str = "",
    opening: str = "",
    answer: str = "",
) -> CallFormat:
    """The format that reads `markup`, thinking between `think` (`turn_break`: what the
    template writes between prose and calls it puts in a turn of their own; `opening`: what
    the generation prompt ends with, which opens a call, and `answer` the header an answer
    continues it with)."""
    if isinstance(markup, PythonicMarkup):
        return LearnedPythonic(markup, think)
    return DerivedFormat(markup, think, turn_break, opening, answer)


def markers_of(fmt: CallFormat) -> tuple[str, ...]:
    """The markup a learned format's calls open and close with."""
    if isinstance(fmt, LearnedPythonic):
        return (fmt.open, fmt.close)
    if not isinstance(fmt, DerivedFormat):
        return fmt.markers()
    m = fmt.markup
    lits = [m.opening, m.section_close if m.sectioned else m.call_close]
    lits += [] if m.sectioned else [m.section_close]
    found = (lit.sample.strip() for lit in lits)
    return tuple(dict.fromkeys(t for t in found if t))


@dataclass(frozen=True)
class Learning:
    """A learned format's markers, argument encoding and the probes it read back."""

    markers: tuple[str, ...]
    arguments: str
    checked: tuple[str, ...]
    unchecked: tuple[tuple[str, str], ...] = ()  # (probe, why it could not be checked)
    failed: tuple[tuple[str, str], ...] = ()  # (probe, how it did not read back)
    opening: str = ""  # what the generation prompt ends with, which the answer continues
    answer: str = ""  # what answer text begins with after the opening

    @property
    def confidence(self) -> str:
        """See the module guarantees."""
        return "low" if self.failed else "medium" if self.unchecked else "high"

    def describe(self) -> str:
        """`learned: markers …, arguments …, confidence …` (what `templates show` prints)."""
        said = f"read back: {', '.join(self.checked)}"
        for words, probes in (("not read back", self.failed), ("not checked", self.unchecked)):
            if probes:
                said += f"; {words}: " + "; ".join(f"{p} ({why})" for p, why in probes)
        markers = " … ".join(_shown(m) for m in self.markers)
        if self.opening:
            markers += (
                f" (the generation prompt ends with {_shown(self.opening)}, which a call"
                f" continues, an answer with {_shown(self.answer)})"
            )
        return (
            f"learned: markers {markers}, arguments {self.arguments},"
            f" confidence {self.confidence} ({said})"
        )


def arguments_of(fmt: CallFormat) -> str:
    """How `fmt` writes a call's arguments, in words and a sample."""
    if isinstance(fmt, LearnedPythonic):
        return "pythonic, a call list [NAME(KEY=VALUE, …)]"
    if not isinstance(fmt, DerivedFormat) or not fmt.markup.per_key:
        return "a JSON object"
    m = fmt.markup
    q_open, q_close = m.quote_open, m.quote_close
    one = m.param_open.sample + "KEY" + m.param_mid.filled("KEY")
    one += f"{q_open}VALUE{q_close}" + m.param_close.filled("KEY")
    said = f"one per argument, {_shown(one)}"
    if m.param_sep.sample:
        said += f" separated by {_shown(m.param_sep.sample)}"
    return said + (f" (strings quoted {_shown(q_open)})" if q_open else "")


def _shown(text: str) -> str:
    """`text` in backquotes, its line breaks and tabs escaped, on one line."""
    escaped = text.replace(KEY, "KEY").replace("\n", "\\n").replace("\t", "\\t")
    return "`" + escaped.replace("\r", "\\r") + "`"


__all__ = [
    "NUMBER",
    "ONE",
    "PROBES",
    "PROSE",
    "RESULT",
    "TWO_ARGS",
    "TWO_CALLS",
    "LearnedPythonic",
    "Learning",
    "arguments_of",
    "learned_format",
    "markers_of",
]
