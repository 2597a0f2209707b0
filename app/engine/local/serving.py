"""A local model loaded with the choices remembered for it, and a model opened for a server in a
worker of its own.

Guarantees: `load_chosen` is the one way a command or a server loads a file with its choice
(`ModelChoice`: template, sampling, load settings, projector): the template is the choice's,
else the one the file's metadata names (`default_template_name`: a Gemma GGUF without one gets
Gemma's), specialised for the model, and the sampling is the choice's over the template's
defaults; a `rope_scale` above 1 (the command line's `--rope-scale`, never remembered) loads it
with YaRN RoPE scaling by that factor over the choice's load settings; `Models.need` is the fit
check's estimate for a file and its projector at the context that fits `room` bytes (its trained
context, halved until it fits, `memory.context_that_fits`); `Models.open` starts a worker for
one model and loads it there (`Opened`), and if the load fails the worker is stopped before the
error is raised; `Opened.close` stops it. `Models.embedder` does the same for an embedding model
(`EmbeddingClient`, in llama.cpp's embedding mode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from app.domain.library import MemoryEstimate, ModelEntry
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.embedder import EmbeddingClient
from app.engine.local.memory import context_that_fits, with_projector
from app.engine.local.session import ChatSession
from app.engine.local.tokenizer import ModelTokenizer
from app.engine.protocol import ModelInfo, SnapshotSettings
from app.settings import load_settings
from app.templates.base import Template
from app.templates.choices import ChoiceStore, ModelChoice
from app.templates.registry import default_template_name, get_template


@dataclass(frozen=True)
class Loaded:
    """What was loaded: the worker's report, the template and the sampling for the model."""

    path: str
    info: ModelInfo
    template: Template
    sampling: Sampling


def load_chosen(
    client: WorkerClient,
    path: str,
    choice: ModelChoice,
    *,
    n_ctx: int,
    threads: int | None,
    sequences: int,
    cache_ram: int,
    projector: Path | None,
    seed: int | None = None,
    on_progress: Callable[[float], None] | None = None,
    rope_scale: float = 1.0,
) -> Loaded:
    """Load `path` into `client` with `choice` (see the module guarantees)."""
    settings = load_settings()
    load = replace(choice.load_settings(settings.gpu_layers), rope_scale=rope_scale)
    info = client.load(
        path,
        n_ctx=n_ctx,
        n_threads=threads,
        on_progress=on_progress,
        settings=load,
        snapshots=SnapshotSettings.of(settings.kv_cache_gib, cache_ram),
        sequences=sequences,
        projector=projector,
    )
    name = choice.template or default_template_name(info.metadata)
    template = get_template(name).for_model(info.metadata)
    sampling = choice.apply(template.defaults).sampling(seed=seed)
    return Loaded(path, info, template, sampling)


@dataclass
class Opened:
    """A model loaded in a worker of its own, for a server."""

    client: WorkerClient
    loaded: Loaded
    tokenizer: ModelTokenizer

    @property
    def template(self) -> Template:
        return self.loaded.template

    @property
    def info(self) -> ModelInfo:
        return self.loaded.info

    def sequence_use(self) -> dict[str, int]:
        return self.client.sequence_use()

    def session(self) -> ChatSession:
        loaded = self.loaded
        return ChatSession(
            self.client, loaded.template, sampling=loaded.sampling, tokenizer=self.tokenizer
        )

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class Models:
    """How a server loads the models it is asked for: threads, answers at once, prompt cache."""

    threads: int | None = None
    sequences: int = 1
    cache_ram: int = 2048

    def need(self, model: ModelEntry, projector: Path | None, room: int) -> MemoryEstimate:
        _, estimate = context_that_fits(
            with_projector(model, projector),
            model.context_length,
            sequences=self.sequences,
            available=room,
        )
        return estimate

    def open(self, path: str, projector: Path | None, n_ctx: int) -> Opened:
        client = WorkerClient()
        try:
            loaded = load_chosen(
                client,
                path,
                ChoiceStore().get(path),
                n_ctx=n_ctx,
                threads=self.threads,
                sequences=self.sequences,
                cache_ram=self.cache_ram,
                projector=projector,
            )
        except BaseException:
            client.close()
            raise
        return Opened(client, loaded, ModelTokenizer(client))

    def embedder(self, path: str) -> EmbeddingClient:
        """An embedding model loaded in a worker of its own (stopped if the load fails)."""
        client = EmbeddingClient()
        try:
            client.load_embedding_model(path, n_threads=self.threads)
        except BaseException:
            client.close()
            raise
        return client


__all__ = ["Loaded", "Models", "Opened", "load_chosen"]
