"""Discover: the Hugging Face hub's GGUF models as the window sees them — a search, a
repository's files with a memory verdict for this computer, and downloads into the library.

Guarantees: the hub is asked only when `search` or `open_repo` is called (the user's action),
on a worker thread, its answers coming back as signals on the GUI thread; a failure (no
network, a refusal, a malformed answer) comes back as one sentence on `failed`, never an
exception; each file's verdict is the library's own (`estimate_memory` on its size, the
context's cache unknown until its header is read, so a model that "fits" here may still need
a shorter context); downloads go through the library's queue (resumable, each part checked
against the sha256 the hub publishes) into the default models folder, and a finished one is
in the library at once (the library rescans).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from app.controllers.background import Background
from app.controllers.library_host import LibraryHost
from app.domain.library import Fit, MemoryEstimate, human_size
from app.engine.local.memory import available_memory, estimate_memory
from app.library import folders
from app.library.hub import HubFile, HubRepo, files, hub_url, search

VERDICTS = {
    Fit.FITS: "fits",
    Fit.TIGHT: "fits, only just",
    Fit.TOO_BIG: "will not fit",
    Fit.UNKNOWN: "",
}


@dataclass(frozen=True)
class Offer:
    """One downloadable model of a repository, with what it would need here."""

    file: HubFile
    memory: MemoryEstimate
    targets: tuple[str, ...] = ()  # the files its download becomes
    in_library: bool = False  # every one of them is there already

    @property
    def verdict(self) -> Fit:
        return self.memory.verdict

    def short(self) -> str:
        """`fits`, `fits, only just`, `will not fit` (empty when memory cannot be read)."""
        return VERDICTS[self.memory.verdict]

    def words(self) -> str:
        """The verdict as a sentence."""
        need = human_size(self.memory.total)
        have = human_size(self.memory.available or 0)
        if self.file.problem:
            return f"Cannot be downloaded: {self.file.problem}."
        verdict = self.memory.verdict
        if verdict is Fit.TOO_BIG:
            return (
                f"Will not fit: its file alone needs about {need} and {have} is available here."
                " Choose a smaller quantisation."
            )
        if verdict is Fit.TIGHT:
            return (
                f"Fits, but only just: about {need} before its context's cache, and {have} is"
                " available here."
            )
        if verdict is Fit.FITS:
            return f"Fits: about {need} before its context's cache; {have} is available here."
        return f"Needs about {need} before its context's cache; free memory could not be read."


class HubHost(QObject):
    found = Signal(str, list)  # the query, [HubRepo]
    listed = Signal(str, list)  # the repository, [Offer]
    started = Signal(object, list)  # the HubFile, the paths its download becomes
    failed = Signal(str)

    def __init__(self, library: LibraryHost, hub: str | None = None) -> None:
        super().__init__()
        self.library = library
        self.hub = hub
        self._worker = Background("hub", lambda text, _details: self.failed.emit(text))
        self.n_ctx = 4096

    @property
    def address(self) -> str:
        return self.hub or hub_url()

    def search(self, query: str) -> None:
        """Ask the hub for GGUF repositories matching `query` (an empty query: the popular)."""
        hub = self.address

        def then(repos: list[HubRepo]) -> None:
            self.found.emit(query, repos)

        self._worker.run(lambda: search(query, hub=hub), then)

    def open_repo(self, repo: str) -> None:
        """Ask the hub for the GGUF files of `repo`, each with its verdict for this computer."""
        hub, n_ctx = self.address, self.library.settings.context_length

        def work() -> list[Offer]:
            have = available_memory()
            dest = folders.models_dir().joinpath(*repo.split("/"))
            offers = []
            for f in files(repo, hub=hub):
                targets = [r.target for r in f.requests(dest, hub)]
                memory = estimate_memory(f, n_ctx, available=have)
                here = all(t.is_file() for t in targets)
                offers.append(Offer(f, memory, tuple(str(t) for t in targets), here))
            return offers

        def then(offers: list[Offer]) -> None:
            self.listed.emit(repo, offers)

        self._worker.run(work, then)

    def download(self, offer: Offer) -> list[str]:
        """Queue `offer`'s download; the paths it becomes (empty when it cannot be had)."""
        targets = self.library.download_hub(offer.file, self.address)
        if targets:
            self.started.emit(offer.file, targets)
        return targets


__all__ = ["HubFile", "HubHost", "HubRepo", "Offer"]
