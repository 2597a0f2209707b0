"""Files attached to a message: whole when they fit, the most relevant passages when not —
and the message says which, before it is sent.

Guarantees: the attachments' text goes whole when all of it fits the budget (the context left
after the history and the answer's reserve); otherwise each file is chunked and the passages
most relevant to the message are retrieved (hybrid search over that file alone), as many as
fit; passages are numbered `[1]`, `[2]`, … across the message, each with its file and page or
lines, so the answer can cite them; a file that cannot be read is a notice and the message is
still sent; a conversation that uses the documents library also gets the library's passages
most relevant to the message (refreshed first), in the room the files left, said as
"library: 4 passages from 2 documents" (and how many files the refresh removed as reached
through a link leading out of their folder, when any were); the context is plain text of the
message — what a document spells (control tokens included) stays text, as everything a user
writes does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from app.documents.contained import removed_count
from app.documents.extract import Extracted, extract
from app.documents.index import DocumentIndex, Hit
from app.domain.attachments import HEAD, compose

Count = Callable[[str], int]


def _many(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class Passage:
    number: int
    file: str
    where: str  # "page 3", "lines 10–24", "whole file"
    text: str

    def cited(self) -> str:
        """The passage as the prompt numbers it."""
        return f"[{self.number}] {self.file}, {self.where}:\n{self.text}"


@dataclass(frozen=True)
class Attachment:
    """What one attached file became."""

    name: str
    mode: Literal["whole", "passages", "unreadable", "library"]
    tokens: int  # what it adds to the prompt
    chunks: int = 0  # of the file, when passages were chosen
    passages: tuple[Passage, ...] = ()
    notice: str | None = None

    def note(self) -> str:
        """What the message shows: "report.docx: whole file, 3,200 tokens"."""
        if self.mode == "unreadable":
            return f"{self.name}: {self.notice}"
        if self.mode == "library":
            found, documents = len(self.passages), len({p.file for p in self.passages})
            said = f"library: {_many(found, 'passage')} from {_many(documents, 'document')}"
            return said + (f" ({self.notice})" if self.notice else "")
        said = (
            f"whole file, {self.tokens:,} tokens"
            if self.mode == "whole"
            else f"{len(self.passages)} passages of {self.chunks}"
        )
        return f"{self.name}: {said}" + (f" ({self.notice})" if self.notice else "")


@dataclass
class Attached:
    """The context a message carries, and what each file became."""

    files: list[Attachment] = field(default_factory=list)
    context: str = ""

    @property
    def passages(self) -> list[Passage]:
        return [p for f in self.files for p in f.passages]


def _fitting(hits: list[Hit], room: int, count: Count, first: int) -> tuple[list[Passage], int]:
    """The hits that fit `room` tokens, in order, numbered from `first`; (passages, used)."""
    chosen: list[Passage] = []
    used = 0
    for hit in hits:
        cost = count(hit.text) + 12  # the passage's heading
        if used + cost > room:
            break
        chosen.append(Passage(first + len(chosen), Path(hit.file).name, hit.where(), hit.text))
        used += cost
    return chosen, used


def _passages(
    extracted: Extracted, path: Path, question: str, room: int, count: Count, first: int
) -> tuple[list[Passage], int, int]:
    """The passages of one file that fit `room` tokens, best first; (passages, chunks, used)."""
    index = DocumentIndex(memory=True)
    try:
        added = index.add_extracted(path, extracted)
        hits: list[Hit] = index.search(question, k=max(1, added.chunks))
    finally:
        index.close()
    chosen, used = _fitting(hits, room, count, first)
    return chosen, added.chunks, used


LIBRARY_K = 8  # the library's passages considered for one message


def _library(
    library: DocumentIndex, question: str, room: int, count: Count, first: int
) -> Attachment:
    removed = sum(a.removed for a in library.refresh()[0])
    notice = removed_count(removed) if removed else None
    chosen, used = _fitting(library.search(question, LIBRARY_K), room, count, first)
    return Attachment("library", "library", used, passages=tuple(chosen), notice=notice)


def attach(
    paths: Sequence[Path],
    question: str,
    budget: int,
    count: Count,
    library: DocumentIndex | None = None,
) -> Attached:
    """The attachments of one message, and the library's passages when `library` is given
    (see the module guarantees)."""
    out = Attached()
    said: dict[Path, Attachment] = {}
    readable: list[tuple[Path, Extracted]] = []
    for path in paths:
        extracted = extract(path)
        if not extracted.text.strip():
            said[path] = Attachment(path.name, "unreadable", 0, notice=extracted.notice)
        else:
            readable.append((path, extracted))
    whole = {path: count(extracted.text) for path, extracted in readable}
    parts: list[str] = []
    if sum(whole.values()) + 12 * len(whole) <= budget:
        for path, extracted in readable:
            said[path] = Attachment(path.name, "whole", whole[path], notice=extracted.notice)
            parts.append(f"Document: {path.name} (whole file)\n{extracted.text}")
    else:
        room = budget // max(1, len(readable))
        number = 1
        for path, extracted in readable:
            chosen, total, used = _passages(extracted, path, question, room, count, number)
            number += len(chosen)
            said[path] = Attachment(
                path.name, "passages", used, total, tuple(chosen), extracted.notice
            )
            parts += [p.cited() for p in chosen]
    out.files = [said[path] for path in paths if path in said]  # in the order attached
    if library is not None:
        left = budget - sum(f.tokens + 12 for f in out.files)
        found = _library(library, question, left, count, 1 + len(out.passages))
        out.files.append(found)
        parts += [p.cited() for p in found.passages]
    if parts:
        cite = " Cite the numbered passages you use as [n]."
        head = HEAD + (cite if out.passages else "")
        out.context = head + "\n\n" + "\n\n".join(parts)
    return out


def with_attachments(text: str, attached: Attached) -> str:
    """The message as sent: the documents first, then what the user wrote."""
    return compose(attached.context, text)


__all__ = ["Attached", "Attachment", "Passage", "attach", "with_attachments"]
