"""Samples of what a model generates in a call format: calls as the format writes them, where
the answer begins or after answer text, and answer text itself.

Guarantees: the calls are the format's own `write`; a call that opens with a trigger counting
only where the answer begins (`leading`) goes, after text, behind one of the format's other
triggers. A format whose generation prompt ends with markup the answer continues (`opening`)
has it taken off calls that begin the answer, its answer text written as its official template
writes an assistant's text (the template in tests/fixtures/llama_templates that `detect` maps
to the format), and calls after text, or text after a think block, as a message of their own
(the opening again).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from app.templates.calls.detect import Detection, detect, renderer, turn_part
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.scanner import CallScanner, Scanned

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
_SENTINEL = "sample_answer_text"


def detected(template: str, name: str) -> Detection:
    """What `detect` finds in the official template `template` (a stem in TEMPLATES), failing
    the test unless it is the format called `name`."""
    found = detect((TEMPLATES / f"{template}.jinja").read_text(encoding="utf-8"))
    assert found.format is not None and found.format.name == name, found.reason
    return found


def written(fmt: CallFormat, calls: Sequence[ToolCall]) -> str:
    """The calls as the format writes them."""
    return "".join(p.text for p in fmt.write(calls))


def at_start(fmt: CallFormat, calls: Sequence[ToolCall]) -> str:
    """The calls as a model writes them to begin its answer."""
    return written(fmt, calls).removeprefix(fmt.opening)


def after_text(fmt: CallFormat, calls: Sequence[ToolCall]) -> str:
    """The calls as a model writes them after answer text."""
    text = written(fmt, calls)
    if text.startswith(fmt.leading):
        return next(t for t in fmt.triggers if t not in fmt.leading) + text
    return text


def said(fmt: CallFormat, text: str) -> str:
    """Answer text as a model writes it to begin its answer (`text` as it is, unless the
    format's answer continues an opening: then as its template writes an assistant's text)."""
    if not fmt.opening:
        return text
    own = getattr(fmt, "answer", None)  # a learned format knows how its answer begins
    return (own if isinstance(own, str) else _answer_lead(fmt.name)) + text


def prose_then(fmt: CallFormat, prose: str, calls: Sequence[ToolCall]) -> str:
    """Answer text then calls, as a model writes them (a format whose answer continues an
    opening writes the calls as a message of their own: the opening, then the calls)."""
    if not fmt.opening:
        return prose + after_text(fmt, calls)
    return said(fmt, prose) + fmt.opening + at_start(fmt, calls)


def after_think(fmt: CallFormat, text: str) -> str:
    """Answer text as a model writes it after a think block at the start of its answer (a
    format whose answer continues an opening writes the opening again: a new message)."""
    return fmt.opening + said(fmt, text) if fmt.opening else text


@cache
def _answer_lead(name: str) -> str:
    """What the template of the format `name` has a model write before an assistant's text."""
    source = _template_of(name)
    turn = {"role": "assistant", "content": _SENTINEL}
    part = turn_part(renderer(source, "", "", None), [{"role": "user", "content": "q"}], turn)
    return part.generated.split(_SENTINEL, 1)[0]


@cache
def _template_of(name: str) -> str:
    """The official template that `detect` maps to the format `name`."""
    for path in sorted(TEMPLATES.glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        found = detect(source).format
        if found is not None and found.name == name:
            return source
    raise LookupError(f"no template in {TEMPLATES} speaks {name}")


def scanned(fmt: CallFormat, pieces: Sequence[str]) -> list[Any]:
    """What the scanner hands on for `pieces`, adjacent text joined."""
    scanner = CallScanner(fmt)
    out: list[str | Scanned] = []
    for piece in pieces:
        out += scanner.feed(piece)
    out += scanner.finish()
    joined: list[Any] = []
    for item in out:
        if isinstance(item, str) and joined and isinstance(joined[-1], str):
            joined[-1] += item
        else:
            joined.append(item)
    return joined
