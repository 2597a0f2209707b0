"""Extracted text cut into passages a prompt can hold, each with where it came from.

Guarantees: every character of the text is in some chunk; a chunk is whole lines (a line
longer than the size is cut into pieces that keep its line number) of about `size` characters,
with the last line of one chunk repeated at the start of the next so a sentence across the cut
is found either way; each chunk names its page (PDF, 1-based) and its line range (1-based,
within the page for a PDF).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.documents.extract import Extracted

SIZE = 900


@dataclass(frozen=True)
class Chunk:
    text: str
    page: int | None
    first_line: int
    last_line: int


def _pieces(text: str, first_line: int, size: int) -> list[tuple[int, str]]:
    """(line number, text) pieces, a long line cut into parts of at most `size`."""
    out = []
    for offset, line in enumerate(text.splitlines()):
        number = first_line + offset
        if len(line) <= size:
            out.append((number, line))
        else:
            out += [(number, line[i : i + size]) for i in range(0, len(line), size)]
    return out


def chunks(extracted: Extracted, size: int = SIZE) -> list[Chunk]:
    """The passages of `extracted` (see the module guarantees)."""
    out: list[Chunk] = []
    for page in extracted.pages:
        pieces = _pieces(page.text, page.first_line, size)
        start = 0
        while start < len(pieces):
            end, length = start, 0
            while end < len(pieces) and (end == start or length + len(pieces[end][1]) <= size):
                length += len(pieces[end][1]) + 1
                end += 1
            text = "\n".join(p[1] for p in pieces[start:end])
            if text.strip():
                out.append(Chunk(text, page.page, pieces[start][0], pieces[end - 1][0]))
            if end >= len(pieces):
                break
            start = end - 1 if end - 1 > start else end  # the last line again: the overlap
    return out


__all__ = ["SIZE", "Chunk", "chunks"]
