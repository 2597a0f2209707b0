"""What folding one event changed on a reply: the values a frontend paints or prints.

Guarantees: a change names a segment by its index in `reply.segments` (or carries analysis
text, which never names a segment); `add` is the one way a segment is appended, and it says so
with an `Added`.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.history import Reply, Segment


@dataclass(frozen=True)
class Added:
    """Segment `index` was appended (with whatever text it already holds)."""

    index: int


@dataclass(frozen=True)
class Appended:
    """`text` was appended to segment `index`."""

    index: int
    text: str


@dataclass(frozen=True)
class Updated:
    """Segment `index` changed otherwise (text replaced, card state, completeness)."""

    index: int


@dataclass(frozen=True)
class Thought:
    """Analysis text was added to the debug record (never shown in the transcript)."""

    text: str


Change = Added | Appended | Updated | Thought


def add(reply: Reply, segment: Segment) -> list[Change]:
    """Append `segment` to the reply: the change that says so."""
    reply.segments.append(segment)
    return [Added(len(reply.segments) - 1)]


__all__ = ["Added", "Appended", "Change", "Thought", "Updated", "add"]
