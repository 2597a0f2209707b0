"""The model library as the window sees it: the scanned list with memory estimates, the
catalogue, the models folders, the default model, deleting, and the download queue.

The list is every model the app can load: the bundled ones (SmolLM2, Gemma 3 270M, whether or
not Gemma is assembled yet), the models folders' GGUFs and the recent files still there, each
with its card (friendly name, tools / reasoning / vision, from its header, cached per file
version) and the image projector that loads with it (the one chosen in Model settings, else the
one in its folder: `scan.listing`), whose file counts in its memory estimate (with the weights:
`memory.with_projector`), as it does when the window loads it; `prepare` readies a model to load
off the GUI thread (a bundled one checked, Gemma assembled on first use).

Guarantees: scanning, the settings file, the trash and the catalogue are touched off the GUI
thread (results come back as signals); downloads run on their own threads, at most
`max_downloads` at once (settings), and their progress reaches the GUI thread as
`DownloadProgress` values; a finished download rescans the list; partial downloads an earlier
run left in the models folders are listed as paused, ready to resume; closing pauses the
running downloads (their partial files stay).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from app.controllers.background import Background
from app.controllers.model_context import Sizing, estimate
from app.domain.library import DownloadProgress, MemoryEstimate, ModelEntry, human_size
from app.engine.local.memory import available_memory, gpu_share_of, projector_bytes, with_projector
from app.errors import HarmonyDeskError
from app.library import folders
from app.library.bundled import assembled_default_model, bundled_models
from app.library.catalog import Catalog, CatalogModel, load_catalog
from app.library.download import DownloadRequest, check_space
from app.library.queue import DownloadQueue, paused_downloads
from app.settings import Settings, load_settings, save_settings
from app.templates.choices import ChoiceStore

if TYPE_CHECKING:  # the scan makes them, off the start path
    from app.library.cards import ModelCard
    from app.library.hub import HubFile


@dataclass(frozen=True)
class Listed:
    """One row of the models page and the picker: the model, its estimate at the configured
    context and answers at once, its card, and where it was found (`bundled`, `folder` or
    `recent`)."""

    entry: ModelEntry
    memory: MemoryEstimate
    is_default: bool
    card: ModelCard | None = None
    source: str = "folder"
    loadable_now: bool = True  # False: a bundled model still to be assembled (`prepare` does it)
    projector: str = ""  # the image projector that loads with it ("": it sees no images)
    unpaired: str = ""  # why the projector chosen for it cannot be used (its file is gone)

    @property
    def title(self) -> str:
        return self.card.title if self.card is not None else self.entry.name

    @property
    def projector_size(self) -> int:
        """Bytes of its projector's file (0 without one): counted in `memory`."""
        return projector_bytes(self.projector)

    def sees(self) -> str:
        """ "Sees images with its projector mmproj-x.gguf (851 MiB, counted in its memory)",
        or why the chosen one cannot be used, or ""."""
        if self.projector:
            name, size = Path(self.projector).name, human_size(self.projector_size)
            return f"Sees images with its projector {name} ({size}, counted in its memory)"
        return f"Reads text only: {self.unpaired}" if self.unpaired else ""


_Scanned = tuple[
    Settings, list["Listed"], Catalog | None, list[DownloadRequest], int | None, list[str]
]


def projector_for(model: str, chosen: str | None = None) -> Path | None:
    """The projector that loads with `model` (`projectors.projector_for`; the window's way to
    it: the projectors module loads with the first use, off the start path)."""
    from app.library import projectors

    return projectors.projector_for(model, chosen)


def is_projector(path: Path) -> bool:
    """Whether the GGUF at `path` is an image projector (`projectors.is_projector`)."""
    from app.library import projectors

    return projectors.is_projector(path)


def with_projector_sized(sizing: Sizing, projector: Path | None) -> Sizing:
    """The loaded model's sizing with `projector`'s file counted with its weights (None: the
    model alone)."""
    return dataclasses.replace(sizing, model=with_projector(sizing.model, projector))


def startup_choice() -> tuple[str | None, int]:
    """The model the window loads at start (None: the bundled default model) and its context."""
    settings = load_settings()
    return folders.startup_model(settings), settings.context_length


class LibraryHost(QObject):
    listed = Signal(list)  # [Listed]
    catalogued = Signal(list)  # [CatalogModel]
    foldersChanged = Signal(list)  # [str]
    progressed = Signal(object)  # DownloadProgress
    downloaded = Signal(str)  # the path of a finished download
    notice = Signal(str)
    failed = Signal(str)

    def __init__(self, catalog_path: Path | None = None, **download_options: float) -> None:
        super().__init__()
        self._worker = Background("library", lambda text, _details: self.failed.emit(text))
        self._catalog_path = catalog_path
        self.catalog: Catalog | None = None
        self.rows: list[Listed] = []
        self.settings = Settings()
        self.available: int | None = None  # bytes of memory free at the last scan
        self.recent: list[str] = []  # the recent model files at the last scan, newest first
        self.gpu_offload = False  # llama.cpp reported GPU offload when a model last loaded
        self.queue = DownloadQueue(2, on_update=self._update, **download_options)
        self._resumable_found = False

    # --- reading -------------------------------------------------------------------------

    def refresh(self) -> None:
        """Scan the models folders again (and read the catalogue the first time)."""

        def work() -> _Scanned:
            from app.controllers.model_host import RecentModels
            from app.library.scan import listing  # it reads the models' templates: off the start

            settings = load_settings()
            where = folders.library_folders(settings)
            recent = RecentModels().load()
            choices, offload = ChoiceStore(), self.gpu_offload
            found = listing(
                where,
                bundled=bundled_models(),
                recent=recent,
                chosen=lambda path: choices.get(path).projector,
            )
            have = available_memory()
            n_ctx, n = settings.context_length, settings.parallel

            def memory_of(e: ModelEntry, projector: str) -> MemoryEstimate:
                share = gpu_share_of(choices.get(e.path).load_settings(), e.layers, offload)
                sized = with_projector(e, projector)
                return estimate(sized, n_ctx, sequences=n, available=have, gpu_share=share)

            rows = [
                Listed(
                    f.entry,
                    memory_of(f.entry, f.projector),
                    self._is_default(f.entry, settings),
                    f.card,
                    f.where,
                    f.where != "bundled" or Path(f.entry.path).is_file(),
                    f.projector,
                    f.unpaired,
                )
                for f in found
            ]
            catalog = self.catalog or self._read_catalog()
            partials = [] if self._resumable_found else paused_downloads(where)
            return settings, rows, catalog, partials, have, recent

        self._worker.run(work, self._show)

    @staticmethod
    def _is_default(e: ModelEntry, settings: Settings) -> bool:
        if settings.default_model is None:
            return e.bundled and Path(e.path) == assembled_default_model()
        return e.path == settings.default_model

    def title_of(self, path: str) -> str:
        """The name a person knows the model at `path` by, with its quantisation
        (`SmolLM2 135M Instruct · Q4_1`): its card's, else its file name's."""
        row = next((r for r in self.rows if r.entry.path == path), None)
        if row is not None:
            quant = row.entry.quantization
            return f"{row.title} · {quant}" if quant else row.title
        from app.library.cards import quant_of_name, strip_quant

        name = Path(path).name
        quant = quant_of_name(name)
        return f"{strip_quant(name)} · {quant}" if quant else strip_quant(name)

    def prepare(self, path: str, then: Callable[[str], object]) -> None:
        """Call `then(file)` with the file to load for `path` once it is ready: a bundled model
        is checked first (Gemma assembled on first use, a few seconds), off the GUI thread."""
        from app.library.bundled import prepare

        row = next((r for r in self.rows if r.entry.path == path), None)
        if row is None or not row.entry.bundled:
            then(path)
            return
        if not row.loadable_now:
            self.notice.emit(f"Preparing {row.title} for its first use…")

        def ready(file: str) -> None:
            then(file)

        self._worker.run(lambda: str(prepare(path)), ready)

    @staticmethod
    def catalog_targets(model: CatalogModel) -> tuple[str, ...]:
        """The files a catalogue entry's download writes into the models folder."""
        return tuple(str(r.target) for r in model.requests(folders.models_dir()))

    def catalog_note(self, model: CatalogModel) -> str:
        """What the page says beside a catalogue entry: already here, or too big to run here."""
        have = {Path(f).name for row in self.rows for f in row.entry.files}
        if all(Path(r.target).name in have for r in model.requests(folders.models_dir())):
            return "in your library"
        if self.available and model.size > self.available:
            return f"larger than the memory available here ({human_size(self.available)})"
        return ""

    def _read_catalog(self) -> Catalog | None:
        try:
            return load_catalog(self._catalog_path)
        except HarmonyDeskError as exc:
            message = exc.message
            self._worker.later(lambda: self.failed.emit(message))
            return None

    def _show(self, result: _Scanned) -> None:
        settings, rows, catalog, partials, self.available, self.recent = result
        self.settings, self.rows = settings, rows
        self.queue.set_limit(settings.max_downloads)
        if catalog is not None:
            self.catalog = catalog
            self.catalogued.emit(list(catalog.models))  # again: the notes follow the list
        if not self._resumable_found:
            self._resumable_found = True
            for request in partials:
                with contextlib.suppress(HarmonyDeskError):  # already queued in this run
                    self.queue.add(request, paused=True)
        self.foldersChanged.emit([str(f) for f in folders.library_folders(settings)])
        self.listed.emit(rows)

    # --- changing ------------------------------------------------------------------------

    def _change_settings(self, change: Any, message: str) -> None:
        def work() -> None:
            save_settings(change(load_settings()))

        def then(_: None) -> None:
            if message:
                self.notice.emit(message)
            self.refresh()

        self._worker.run(work, then)

    def add_folder(self, folder: str) -> None:
        self._change_settings(
            lambda s: folders.with_folder(s, folder), f"Models in {folder} are listed too."
        )

    def remove_folder(self, folder: str) -> None:
        self._change_settings(lambda s: folders.without_folder(s, folder), "")

    def set_default(self, entry: ModelEntry | None) -> None:
        """Make `entry` the model loaded at start (None: the bundled model)."""
        from app.library.bundled import prepare

        chat = assembled_default_model()
        path = None if entry is None or Path(entry.path) == chat else entry.path
        name = entry.name if entry is not None else "the bundled model"

        def change(s: Settings) -> Settings:
            return folders.set_default(s, path if path is None else prepare(path))

        self._change_settings(change, f"{name} now loads at start.")

    def delete(self, entry: ModelEntry) -> None:
        """Move the model's files to the trash."""

        def work() -> list[str]:
            moved = folders.trash_model(entry)
            settings = load_settings()
            if settings.default_model == entry.path:  # its default goes with it
                save_settings(folders.set_default(settings, None))
            return moved

        def then(moved: list[str]) -> None:
            self.notice.emit(
                f"{entry.name} moved to the trash ({len(moved)} file{'s' * (len(moved) > 1)})."
            )
            self.refresh()

        self._worker.run(work, then)

    # --- downloads -----------------------------------------------------------------------

    def download_catalog(self, model: CatalogModel) -> None:
        requests = model.requests(folders.models_dir())
        self._worker.run(lambda: check_space(requests, model.name), lambda _: self._add(requests))

    def download_url(self, url: str, sha256: str = "") -> None:
        url, sha256 = url.strip(), sha256.strip().lower()
        if not url.startswith(("http://", "https://")):
            self.failed.emit("Paste a direct http:// or https:// link to a .gguf file.")
            return
        if sha256 and (len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256)):
            self.failed.emit(
                "A sha256 is 64 hexadecimal digits; leave it empty if you do not know it."
            )
            return
        self._add([DownloadRequest(url, folders.models_dir(), sha256=sha256 or None)])

    def download_hub(self, model: HubFile, hub: str | None = None) -> list[str]:
        """Queue a model found on the hub (every part, checked against the hub's sha256) into
        the models folder, under its repository's name; the files it will become."""
        if model.problem:
            self.failed.emit(f"{model.name} cannot be downloaded: {model.problem}.")
            return []
        requests = model.requests(folders.models_dir().joinpath(*model.repo.split("/")), hub)
        self._worker.run(lambda: check_space(requests, model.name), lambda _: self._add(requests))
        return [str(r.target) for r in requests]

    def _add(self, requests: list[DownloadRequest]) -> None:
        for request in requests:
            try:
                self.queue.add(request)
            except HarmonyDeskError as exc:
                self.failed.emit(exc.message)

    def pause(self, job_id: str) -> None:
        self.queue.pause(job_id)

    def resume(self, job_id: str) -> None:
        self.queue.resume(job_id)

    def cancel(self, job_id: str) -> None:
        self.queue.cancel(job_id)

    def _update(self, progress: DownloadProgress) -> None:
        """From a download thread: hand the value to the GUI thread."""
        self._worker.later(lambda: self._arrived(progress))

    def _arrived(self, progress: DownloadProgress) -> None:
        self.progressed.emit(progress)
        if progress.state == "done":
            self.downloaded.emit(progress.message)
            self.refresh()

    def close(self) -> None:
        self.queue.close()


__all__ = [
    "CatalogModel",
    "LibraryHost",
    "Listed",
    "is_projector",
    "projector_for",
    "startup_choice",
    "with_projector_sized",
]
