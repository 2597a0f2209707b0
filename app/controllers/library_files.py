"""File ▸ Add to library: files and folders into the documents library, off the GUI thread.

Guarantees: the same indexing as `harmony-desk documents add` (`app/documents/index.py`): a
folder's readable files are indexed and the folder is remembered, so files that appear in it
later are indexed by the next refresh; an unchanged file is not read again; a file that cannot
be read is kept with its notice and the others are indexed all the same. The work runs on its
own thread; its progress comes back to the GUI thread as `progressed` sentences ("Adding to
the library: 2 of 5 — report.pdf"), its end as `finished` (a sentence, and the notices of
the files that could not be read, one per line, then the links leading out of the folder,
each with why it was skipped — and removed, when it had been indexed before), a failure as
`failed` (a sentence and its details). Importing this module loads nothing of `app.documents`
(numpy, the extractors).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from app.controllers.background import Background
from app.errors import InvalidInputError

if TYPE_CHECKING:  # the documents package loads with the first file added
    from app.documents.index import Added


def document_filter() -> str:
    """What a file dialog lists: the kinds of document the library reads, then any file."""
    from app.documents.extract import SUFFIXES

    kinds = " ".join(f"*{s}" for s in sorted(SUFFIXES))
    return f"Documents ({kinds});;All files (*)"


def summary(added: Sequence[Added]) -> tuple[str, str]:
    """The sentence for what was added, and the notices of files that could not be read."""
    from app.documents.index import SKIPPED

    skipped = [a for a in added if a.kind == SKIPPED]
    added = [a for a in added if a.kind != SKIPPED]
    fresh = [a for a in added if not a.unchanged]
    unread = [a for a in added if a.notice and not a.chunks]
    passages = sum(a.chunks for a in fresh)
    count = len(added)
    said = f"{count} document{'s' * (count != 1)} in the library"
    said += f" ({len(fresh)} read now, {passages:,} passages)" if fresh else " (none changed)"
    said += "; type @ in the message box to attach one."
    if unread:
        said = f"{said} {len(unread)} could not be read."
    if skipped:
        plural = "s lead" if len(skipped) != 1 else " leads"
        said = f"{said} {len(skipped)} link{plural} out of the folder: not read."
    removed = sum(a.removed for a in skipped)
    if removed:
        from app.documents.contained import removed_count

        said = f"{said} {removed_count(removed)}."
    notes = "\n".join(f"{a.path}: {a.notice}" for a in (*unread, *skipped))
    return said, notes


class LibraryFiles(QObject):
    """See the module guarantees."""

    progressed = Signal(str)
    finished = Signal(str, str)
    failed = Signal(str, str)

    def __init__(self) -> None:
        super().__init__()
        self._jobs = Background("library-files", self._failed)
        self.running = False  # files are being added now

    def _failed(self, text: str, details: str) -> None:
        self.running = False
        self.failed.emit(text, details)

    def add(self, paths: Sequence[str]) -> None:
        """Index the files and folders `paths` (see the module guarantees)."""
        chosen = [Path(p) for p in paths]
        self.running = True

        def work() -> list[Added]:
            from app.documents.index import SKIPPED, DocumentIndex, files_in

            missing = [str(p) for p in chosen if not p.exists()]
            if missing:
                raise InvalidInputError(f"No such file or folder: {', '.join(missing)}.")
            files = files_in(chosen)
            index = DocumentIndex()
            added: list[Added] = []
            try:
                for number, file in enumerate(files, 1):
                    said = f"Adding to the library: {number} of {len(files)} — {file.name}"
                    self._jobs.later(partial(self.progressed.emit, said))
                    added.append(index.add(file))
                for folder in (p for p in chosen if p.is_dir()):
                    # remembered; its files were just read; the links leading out are said
                    added += [a for a in index.add_folder(folder) if a.kind == SKIPPED]
            finally:
                index.close()
            return added

        def then(added: list[Added]) -> None:
            self.running = False
            self.finished.emit(*summary(added))

        self._jobs.run(work, then)


__all__ = ["LibraryFiles", "document_filter", "summary"]
