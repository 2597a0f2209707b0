"""The models a server may load on request: the library's, and the files it was given.

Guarantees: `offers` is what the library lists now (`app.library.scan.listing`: the bundled
models, the model folders; read again at each call, from the scan's cache) and the extra files
given, each by its file's stem, without a model that cannot be used (a part missing, an unreadable
header) or one made for embeddings only (an encoder architecture); a bundled model is prepared
(Gemma assembled) when first loaded; `need` and `load` go through the engine's opener (`Opener`,
`app.engine.local.serving.Models`), so a model loads exactly as `serve --model` loads it (its
remembered choices, its projector, the prompt cache), in a worker of its own whose generations
run on the server's engine threads; `served_of` makes the server's view of an opened model.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from app.domain.embedding import Embedder
from app.domain.library import MemoryEstimate, ModelEntry
from app.engine.protocol import ModelInfo
from app.engine.session import ModelSession
from app.library.bundled import bundled_models, prepare
from app.library.folders import library_folders
from app.library.scan import listing
from app.server.fleet import Offer, Started
from app.server.served import ServedModel
from app.settings import load_settings
from app.templates.base import Template

ENCODERS = frozenset({"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "t5encoder"})


class Opened(Protocol):
    """A model loaded in a worker of its own (`app.engine.local.serving.Opened`)."""

    @property
    def template(self) -> Template: ...
    @property
    def info(self) -> ModelInfo: ...
    def session(self) -> ModelSession: ...
    def sequence_use(self) -> dict[str, int]: ...
    def close(self) -> None: ...


class Opener(Protocol):
    """What loads models for a server (`app.engine.local.serving.Models`)."""

    def need(self, model: ModelEntry, projector: Path | None, room: int) -> MemoryEstimate: ...
    def open(self, path: str, projector: Path | None, n_ctx: int) -> Opened: ...


def served_of(opened: Opened, engine: cf.Executor, embedder: Embedder | None = None) -> ServedModel:
    """The server's view of `opened`, its generations on `engine`."""
    info = opened.info
    path = Path(info.path)
    return ServedModel(
        name=path.stem,
        engine=engine,
        session=opened.session,
        template=opened.template,
        n_ctx=info.n_ctx,
        created=int(os.stat(path).st_mtime) if path.exists() else 0,
        use=opened.sequence_use,
        embedder=embedder,
        sees_images=bool(info.projector),
    )


class LibraryModels:
    """See the module guarantees: a `fleet.Loader`."""

    def __init__(
        self,
        opener: Opener,
        engine: cf.Executor,
        *,
        library: bool = True,
        files: Sequence[str] = (),
    ) -> None:
        self.opener, self.engine = opener, engine
        self.library, self.files = library, tuple(files)

    def offers(self) -> Sequence[Offer]:
        found: dict[str, Offer] = {}
        if self.library:
            for model in listing(library_folders(load_settings()), bundled=bundled_models()):
                entry = model.entry
                if entry.usable and entry.architecture not in ENCODERS:
                    name = Path(entry.path).stem
                    found.setdefault(name, Offer(name, entry.path, model.card.title, entry))
        for file in self.files:
            path = Path(file).expanduser().resolve()
            found.setdefault(path.stem, Offer(path.stem, str(path), path.stem))
        return list(found.values())

    def need(self, offer: Offer, room: int) -> MemoryEstimate:
        from app.library.projectors import projector_for
        from app.library.scan import ScanCache

        entry = offer.entry or ScanCache().read(Path(offer.path))[0]
        projector = projector_for(offer.path, _chosen_projector(offer.path))
        return self.opener.need(entry, projector, room)

    def load(self, offer: Offer, need: MemoryEstimate) -> Started:
        from app.library.projectors import projector_for

        path = str(prepare(offer.path))
        opened = self.opener.open(path, projector_for(path, _chosen_projector(path)), need.n_ctx)
        return Started(served_of(opened, self.engine), opened.close)


def _chosen_projector(path: str) -> str | None:
    from app.templates.choices import ChoiceStore

    return ChoiceStore().get(path).projector


__all__ = ["ENCODERS", "LibraryModels", "Opened", "Opener", "served_of"]
