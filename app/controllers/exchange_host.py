"""File ▸ Export and Import for the window: conversations to and from files, off the GUI thread.

Guarantees: the same formats and files as `harmony-desk history export|import`
(`app/store/exchange.py`, `app/store/importers.py`): OpenChatML and its JSON projection carry
the files the messages had attached, Markdown holds what a reader saw; exporting all writes
one file per conversation (`<id>.<format>`) into the folder chosen. An export first waits for
every save asked before it, so it holds what the window shows. An import reads OpenChatML, the
JSON projection, LM Studio and Open WebUI files, stores all of a file or nothing, keeps the
attached files it carries, and says what it could not map; the sidebar's list is read again
and the first imported conversation shown. Nothing here runs on the GUI thread: results come
back as `done` (a sentence), `imported` (the ids stored) or `failed` (a sentence, and the
technical details behind it). Importing this module loads nothing of the store's exchange.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.controllers.background import Background
from app.controllers.conversations import ConversationsController
from app.domain.history import ChatDoc
from app.errors import HarmonyDeskError, InvalidInputError
from app.fileio import OutputError, write_atomic

FORMATS = {  # format → (what a file dialog lists, the file's suffix)
    "ocm": ("OpenChatML (*.ocm)", "ocm"),
    "json": ("OpenChatML JSON (*.json)", "json"),
    "md": ("Markdown (*.md)", "md"),
}
IMPORTABLE = "Conversations (*.ocm *.json);;All files (*)"


@dataclass
class Imported:
    """What an import stored, and what it could not carry over."""

    file: str
    source: str
    ids: list[str]
    titles: list[str]
    notes: list[str] = field(default_factory=list)  # unmapped parts, files not restored

    def sentence(self) -> str:
        count = len(self.ids)
        what = f"“{self.titles[0]}”" if count == 1 else f"{count} conversations"
        said = f"Imported {what} from {Path(self.file).name}."
        return said + (
            f" {len(self.notes)} part(s) could not be carried over." if self.notes else ""
        )


def format_of(chosen_filter: str, path: str) -> str:
    """The format a save dialog's answer names: the file's suffix when it is one of ours,
    else the filter chosen, else OpenChatML."""
    suffix = Path(path).suffix.lstrip(".").lower()
    for fmt, (_listed, ext) in FORMATS.items():
        if suffix == ext:
            return fmt
    return next((fmt for fmt, (listed, _) in FORMATS.items() if listed == chosen_filter), "ocm")


def with_suffix(path: str, fmt: str) -> str:
    """`path`, ending in the format's suffix (added when the user typed none of ours)."""
    ext = FORMATS[fmt][1]
    return path if Path(path).suffix.lower() == f".{ext}" else f"{path}.{ext}"


class ExchangeHost(QObject):
    """See the module guarantees."""

    done = Signal(str)
    imported = Signal(list)  # [conversation id]
    failed = Signal(str, str)

    def __init__(self, conversations: ConversationsController) -> None:
        super().__init__()
        self.conversations = conversations
        self._jobs = Background("exchange", self.failed.emit)

    def _store(self) -> Any:
        return self.conversations.conversations  # a HistoryStore, or the in-memory list

    def _run(self, work: Callable[[], Any], then: Callable[[Any], None], doing: str) -> None:
        def guarded() -> Any:
            try:
                return work()
            except OutputError as exc:  # "cannot write PATH: why": the path is said already
                why = exc.message.rsplit(": ", 1)[-1]
                raise InvalidInputError(f"{doing}: {why}.", exc.message) from exc
            except HarmonyDeskError as exc:
                raise InvalidInputError(f"{doing}: {exc.message}", exc.details) from exc
            except OSError as exc:
                raise InvalidInputError(f"{doing}: {exc.strerror or exc}.", str(exc)) from exc

        self._jobs.run(guarded, then)

    def _written(self, doc: ChatDoc, fmt: str) -> str:
        from app.documents.carry import carried
        from app.documents.kept import KeptFiles
        from app.store.exchange import export

        if fmt == "md":
            return export(doc, fmt)
        kept = KeptFiles()
        try:
            return export(doc, fmt, carried(doc, kept))
        finally:
            kept.close()

    def export_one(self, doc_id: str, path: str, fmt: str) -> None:
        """Write conversation `doc_id` to `path` as `fmt` (see `FORMATS`)."""

        def work() -> str:
            self.conversations.saved()  # what the window shows is written first
            doc = self._store().get(doc_id)
            if doc is None:
                raise InvalidInputError("That conversation is no longer in the history.")
            write_atomic(path, self._written(doc, fmt))
            return f"Exported “{doc.title}” to {path}."

        self._run(work, self.done.emit, f"Could not export to {path}")

    def export_all(self, folder: str, fmt: str) -> None:
        """Write every conversation (not the trash) into `folder`, one file each."""

        def work() -> str:
            self.conversations.saved()
            target = Path(folder)
            count = 0
            for listed in self._store().listed():
                doc = self._store().get(listed.id)
                if doc is not None:
                    write_atomic(target / f"{doc.id}.{FORMATS[fmt][1]}", self._written(doc, fmt))
                    count += 1
            return f"Exported {count} conversation{'s' * (count != 1)} to {folder}."

        self._run(work, self.done.emit, f"Could not export into {folder}")

    def import_from(self, path: str) -> None:
        """Store the conversations in the file at `path` (all of them or none)."""

        def work() -> Imported:
            from app.documents.carry import restore
            from app.documents.kept import KeptFiles
            from app.store.importers import import_file

            result = import_file(Path(path))
            if not result.docs:
                raise InvalidInputError("The file holds no conversation.")
            store = self._store()
            if hasattr(store, "save_many"):
                store.save_many(result.docs)  # one transaction: all of them or none
            else:
                for doc in result.docs:
                    store.save(doc)
            notes = [f"not imported: {note}" for note in result.unmapped]
            kept = KeptFiles()
            try:
                for doc in result.docs:
                    said = restore(doc, result.attachments.get(doc.id), kept)
                    notes += [f"attachment not restored: {note}" for note in said]
            finally:
                kept.close()
            ids, titles = [d.id for d in result.docs], [d.title for d in result.docs]
            return Imported(path, result.source, ids, titles, notes)

        self._run(work, self._stored, f"Could not import {Path(path).name}")

    def _stored(self, result: Imported) -> None:
        self.conversations.refresh_list()
        self.conversations.select(result.ids[0])
        self.done.emit(result.sentence())
        if result.notes:
            self.failed.emit(result.sentence(), "\n".join(result.notes))
        self.imported.emit(result.ids)


__all__ = ["FORMATS", "IMPORTABLE", "ExchangeHost", "Imported", "format_of", "with_suffix"]
