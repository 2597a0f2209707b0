"""The models a server may load on request: the library's, and the files it was given.

Guarantees: `offers` is what the library lists now (`app.library.scan.listing`: the bundled
models, the model folders; read again at each call, from the scan's cache) and the extra files
given, each by its file's stem, without a model that cannot be used (a part missing, an unreadable
header); a model made for embeddings (an encoder architecture) is offered as one (`Offer.embeds`)
and loaded in llama.cpp's embedding mode in a worker of its own, served at /v1/embeddings only
(`embedding_served`); a bundled model is prepared
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
from app.errors import HarmonyDeskError
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


class Embedding(Embedder, Protocol):
    """An embedding model loaded in a worker of its own (`EmbeddingClient`)."""

    def close(self) -> None: ...


class Opener(Protocol):
    """What loads models for a server (`app.engine.local.serving.Models`)."""

    def need(self, model: ModelEntry, projector: Path | None, room: int) -> MemoryEstimate: ...
    def open(self, path: str, projector: Path | None, n_ctx: int) -> Opened: ...
    def embedder(self, path: str) -> Embedding: ...


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


def _chats_not(name: str) -> ModelSession:
    said = f"{name} is an embedding model: it answers /v1/embeddings, not chat requests"
    raise HarmonyDeskError(said)


def embedding_served(embedder: Embedder, engine: cf.Executor) -> ServedModel:
    """The server's view of an embedding model: it embeds (`embedder`) and never chats — the
    fleet sends it no chat request (`Fleet.resolve`); its template is never read."""
    from functools import partial

    from app.templates.registry import get_template

    facts = embedder.facts
    return ServedModel(
        name=facts.name,
        engine=engine,
        session=partial(_chats_not, facts.name),
        template=get_template("completion"),
        n_ctx=facts.context,
        created=facts.created,
        embedder=embedder,
        chats=False,
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
                if entry.usable:
                    name, embeds = Path(entry.path).stem, entry.architecture in ENCODERS
                    offer = Offer(name, entry.path, model.card.title, entry, embeds)
                    found.setdefault(name, offer)
        for file in self.files:
            offer = _file_offer(file)
            found.setdefault(offer.name, offer)
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
        if offer.embeds:
            embedder = self.opener.embedder(path)
            return Started(embedding_served(embedder, self.engine), embedder.close)
        opened = self.opener.open(path, projector_for(path, _chosen_projector(path)), need.n_ctx)
        return Started(served_of(opened, self.engine), opened.close)


def _file_offer(file: str) -> Offer:
    """A file given to the server, as an offer (an embedding model if its architecture is an
    encoder's; a file that cannot be read is offered all the same: its load says why)."""
    from app.library.scan import ScanCache

    path = Path(file).expanduser().resolve()
    try:
        entry: ModelEntry | None = ScanCache().read(path)[0]
    except (OSError, HarmonyDeskError):
        entry = None
    embeds = entry is not None and entry.architecture in ENCODERS
    return Offer(path.stem, str(path), path.stem, entry, embeds)


def _chosen_projector(path: str) -> str | None:
    from app.templates.choices import ChoiceStore

    return ChoiceStore().get(path).projector


__all__ = [
    "ENCODERS",
    "Embedding",
    "LibraryModels",
    "Opened",
    "Opener",
    "embedding_served",
    "served_of",
]
