"""The loaded model as the window sees it: load with progress and cancel, template, sampling.

Guarantees: loading runs on the engine thread and reports progress as a fraction; a cancel ends
it with a clear message; a load error (corrupt file, not enough memory, unsupported
architecture) arrives as `loadFailed` with the app's sentence and leaves the previous state
usable; template and sampling come from the template registry, with the user's remembered
choices for that model applied (its own context length too, `context_for`); it loads with the
settings' `parallel` answers at once, one kept for the window's own turns; recent models are
remembered (most recent first, at most 10). A loaded model is named as the library names it
(`name`: "SmolLM2 135M Instruct · Q4_1"; `description`: file, architecture, template; `base`: why
it is a base model, "" for a chat model: `library/titles.py`). A model loads with its image
projector (`projector_for`: the one chosen in Model settings, else the one in its folder;
`projector` says the one in use, "" for none). A projector that cannot be used — not there any
more, not one for this model (llama.cpp refuses it), or damaged (the worker stops while loading it)
— never leaves the user with no model: the model is loaded again without it, for text only, and the
projector's error arrives as `loadFailed` after `loaded`, saying that images are off (`images_off`
keeps the sentence). A load that fails before the projector's turn (llama.cpp reports the weights
all read, 100 %, before it) is the model's own failure and is not tried again. Importing this
module loads neither the template registry nor the engine's session: they load with the first model
(or scripted source) the host uses.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from app.controllers.bridge import EngineBridge
from app.domain.sampling import Sampling
from app.engine.backend import ModelBackend, ModelLoader
from app.engine.protocol import ModelInfo, SnapshotSettings, WorkerState
from app.engine.session import Capabilities, local_capabilities
from app.errors import HarmonyDeskError, InvalidInputError, LoadProblem, ModelLoadError
from app.fileio import write_atomic
from app.paths import config_dir
from app.readback import read_back
from app.settings import load_settings
from app.templates.choices import ChoiceStore, ModelChoice

RECENT_LIMIT = 1 << 20  # bytes: ten paths

if TYPE_CHECKING:  # the templates and the session load with the first model, not the window
    from collections.abc import Callable

    from app.engine.local.session import ChatSession
    from app.engine.local.tokenizer import ModelTokenizer
    from app.library.titles import Loaded
    from app.templates.base import Template, TemplateDefaults


class RecentModels:
    """The recently opened model files (a small JSON file in the config folder)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "recent-models.json"

    def load(self) -> list[str]:
        data = read_back(self.path, RECENT_LIMIT)
        return [str(p) for p in data if isinstance(p, str)][:10] if isinstance(data, list) else []

    def add(self, path: str) -> list[str]:
        recent = [path, *[p for p in self.load() if p != path]][:10]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(recent, indent=1))
        return recent


class ModelHost(QObject):
    """One backend (a worker process, or a scripted source for tests) and its template."""

    stateChanged = Signal(str)
    progress = Signal(float)
    loaded = Signal(str)  # a one-line description of the model
    loadFailed = Signal(str, str)  # the sentence, and the details behind it
    templateChanged = Signal()  # another template is in use (its features may differ)

    def __init__(self, bridge: EngineBridge, backend: ModelBackend | None = None) -> None:
        super().__init__()
        self.bridge = bridge
        self.backend: ModelBackend | None = backend
        self.worker: ModelLoader | None = None  # what loads models (None: a new worker process)
        self.template: Template | None = None
        self.sampling: Sampling | None = None
        self.name = ""  # readable: "SmolLM2 135M Instruct · Q4_1" (`library/titles.py`)
        self.description = ""  # technical: file, architecture, template
        self.base = ""  # why the loaded model is a base model ("": a chat model)
        self.path = ""
        self.n_ctx = 0
        self.projector = ""  # the loaded model's image projector ("": it sees no images)
        self.images_off = ""  # why the model loaded without the projector it was to have
        self._cancel = threading.Event()
        self.recent = RecentModels()
        self._tokenizer: ModelTokenizer | None = None
        self._tokenizer_of: object = None  # the backend `_tokenizer` belongs to

    @property
    def ready(self) -> bool:
        return self.backend is not None and self.template is not None

    @property
    def capabilities(self) -> Capabilities | None:
        """What the loaded model can do (None: none is loaded)."""
        if self.template is None:
            return None
        return local_capabilities(self.template, self.info)

    @property
    def info(self) -> ModelInfo | None:
        """What the backend says of the loaded model (None: nothing loaded, or it does not say)."""
        return self.backend.info if self.backend is not None else None

    def use(
        self,
        backend: ModelBackend,
        template: str,
        name: str = "scripted",
        *,
        loader: ModelLoader | None = None,
    ) -> None:
        """Use an already loaded backend (the scripted source in tests and benches); `loader`
        loads the next model (None: a worker process started then)."""
        from app.templates.registry import get_template

        self.backend, self.worker = backend, loader
        self.template = get_template(template)
        self.sampling = self.template.defaults.sampling()
        self.name = self.description = name
        self.base = self._named(backend.info, template).base if backend.info is not None else ""
        self.n_ctx = self.info.n_ctx if self.info is not None else 8192
        self.projector = self.info.projector if self.info is not None else ""
        self.images_off = ""
        self.loaded.emit(name)

    def use_scripted(self, scripts: list[str], *, delay_s: float = 0.0) -> None:
        """Use the scripted token source (the screenshot, the UI bench, the window tests)."""
        from app.engine.local.scripted import ScriptedClient

        self.use(ScriptedClient(scripts, delay_s=delay_s), "harmony")

    def _named(self, info: ModelInfo, template: str) -> Loaded:
        from app.library.titles import loaded
        from app.templates.base import Capability

        completion = self.template is not None and (
            self.template.defaults.capability is Capability.COMPLETION
        )
        return loaded(info.path, info.metadata, info.architecture, template, completion)

    def cancel_load(self) -> None:
        self._cancel.set()

    async def load(
        self, path: str | None = None, *, n_ctx: int = 4096, threads: int | None = None
    ) -> bool:
        """Load `path` (None: the bundled default model); True when it loaded."""
        self._cancel.clear()
        self.stateChanged.emit(WorkerState.LOADING.value)
        try:
            client, file, template_name, off = await self.bridge.call(
                lambda: self._load_work(path, n_ctx, threads)
            )
        except HarmonyDeskError as exc:
            self.stateChanged.emit(WorkerState.FAILED.value if self.backend is None else "ready")
            self.loadFailed.emit(exc.message, exc.details)
            return False
        self._adopt(client, file, template_name, off)
        return True

    def _load_work(
        self, path: str | None, n_ctx: int, threads: int | None
    ) -> tuple[Any, str, str, HarmonyDeskError | None]:
        """Off the GUI thread: load the model into the worker (with its projector when it
        has one and it loads): the client, the file, the template's name, and why images are
        off (None when they are not)."""
        from app.engine.local.client import WorkerClient
        from app.library.bundled import default_model_path
        from app.templates.registry import default_template_name

        file = path or str(default_model_path(lambda f: self.progress.emit(f * 0.3)))
        client = self.worker or WorkerClient()
        choice, settings = ChoiceStore().get(file), load_settings()
        reached = [0.0]  # how far the weights got (1.0: read; the projector's turn)

        def progress(fraction: float) -> None:
            reached[0] = max(reached[0], fraction)
            self.progress.emit(0.3 + 0.7 * fraction)

        def load(projector: Path | None) -> Any:
            return client.load(
                file,
                n_ctx=self.context_for(file, n_ctx, choice.context_length),
                n_threads=threads,
                on_progress=progress,
                cancel=self._cancel,
                settings=choice.load_settings(settings.gpu_layers),
                snapshots=SnapshotSettings.of(settings.kv_cache_gib),
                sequences=settings.parallel,
                reserved=1 if settings.parallel > 1 else 0,  # the window's turns never queue
                projector=projector,
            )

        info, off = with_projector_or_not(load, file, choice.projector, lambda: reached[0])
        name = choice.template or default_template_name(info.metadata)
        return client, file, name, off

    def _adopt(
        self, client: Any, file: str, template_name: str, off: HarmonyDeskError | None
    ) -> None:
        """On the GUI thread: the loaded model becomes the backend, with its template, choice,
        names and images' state, and the window hears it loaded (and why images are off)."""
        from app.templates.registry import get_template

        self.backend = self.worker = client
        self._tokenizer = None  # a new model: a new vocabulary
        self.template = get_template(template_name).for_model(client.info.metadata)
        self.apply_choice(ChoiceStore().get(file))
        self.path, self.n_ctx = file, client.info.n_ctx
        self.projector = client.info.projector or ""
        names = self._named(client.info, template_name)
        self.name, self.description, self.base = names.name, names.description, names.base
        self.images_off = text_only(off) if off is not None else ""
        self.recent.add(file)
        self.stateChanged.emit(WorkerState.READY.value)
        self.loaded.emit(self.name)
        if off is not None:
            self.loadFailed.emit(self.images_off, off.details)

    def context_for(self, file: str, asked: int, own: int | None) -> int:
        """The context `file` loads with: its own (Model settings) when it has one, unless
        this load asks more of the model loaded now (a message that did not fit)."""
        again = bool(self.path) and Path(file).resolve() == Path(self.path).resolve()
        return asked if own is None or (again and asked > self.n_ctx) else own

    def template_names(self) -> list[str]:
        from app.templates.registry import template_names

        return template_names()

    def template_problems(self) -> list[str]:
        """What was wrong with the template files in the config folder (each file said)."""
        from app.templates.files import folder_files

        if not folder_files():  # none there, none wrong: the registry loads with the first model
            return []
        from app.templates.registry import folder_problems

        return folder_problems()

    def template_defaults(self, name: str) -> TemplateDefaults:
        """The generation settings that travel with the template called `name`."""
        from app.templates.registry import get_template

        return get_template(name).defaults

    @property
    def runs_on(self) -> str:
        """Where the loaded model runs (CPU, GPU, or split), as llama.cpp placed it."""
        placement = self.info.placement if self.info is not None else None
        return placement.words() if placement is not None else "CPU"

    @property
    def gpu_offload(self) -> bool:
        """llama.cpp, as the worker loaded it, can put layers on a GPU."""
        placement = self.info.placement if self.info is not None else None
        return bool(placement is not None and placement.gpu_offload)

    def choice(self) -> ModelChoice:
        """What the user chose for the loaded model (empty for the scripted source)."""
        return ChoiceStore().get(self.path) if self.path else ModelChoice()

    def settings(self) -> ModelChoice:
        """The template and the sampling values in use, as choices that set each of them."""
        assert self.template is not None and self.sampling is not None
        return ModelChoice.in_use(self.template.name, self.sampling)

    def apply_settings(self, choice: ModelChoice) -> None:
        """Use (and remember for this model) a template and sampling values: `choice` is the
        whole of it (a value left None is the template's from now on)."""
        from app.templates.registry import get_template

        if choice.template and self.template is not None and choice.template != self.template.name:
            metadata = self.info.metadata if self.info is not None else {}
            self.template = get_template(choice.template).for_model(metadata)
            self.templateChanged.emit()
        self.remember(choice, whole=True)

    def apply_choice(self, choice: ModelChoice) -> None:
        """Sampling values from the template's defaults with the user's choices on top."""
        assert self.template is not None
        self.sampling = choice.apply(self.template.defaults).sampling()

    def remember(self, choice: ModelChoice, *, whole: bool = False) -> None:
        """Save the user's sampling choice for this model (merged into what was saved, or
        instead of it when `whole`) and apply it."""
        if self.path:
            choice = ChoiceStore().remember(self.path, choice, whole=whole)
        self.apply_choice(choice)

    def session(self, **options: Any) -> ChatSession:
        """A chat session on the loaded model (call on the engine thread: it asks the worker).
        Sessions share one tokenizer per model, so the vocabulary crosses the pipe once."""
        from app.engine.local.session import ChatSession
        from app.engine.local.tokenizer import ModelTokenizer

        assert self.backend is not None and self.template is not None
        if self._tokenizer is None or self._tokenizer_of is not self.backend:
            self._tokenizer, self._tokenizer_of = ModelTokenizer(self.backend), self.backend
        return ChatSession(
            self.backend,
            self.template,
            sampling=self.sampling,
            tokenizer=self._tokenizer,
            **options,
        )

    def special_tokens(self) -> tuple[tuple[int, bytes], ...]:
        """The model's special tokens by id, spelled out, for the debug pane (on the engine
        thread, after `session`): its control tokens (b"" in the token table), the template's
        control markers, and tokens of their own spelled `<|…|>` (gpt-oss's Harmony markers,
        which llama.cpp spells in the table)."""
        tokenizer, template = self._tokenizer, self.template
        if tokenizer is None or template is None:
            return ()
        table = tokenizer.token_table()
        ids = {i for i, p in enumerate(table) if not p or _marker_shaped(p)}
        ids |= set(template.control_markers(tokenizer).values())
        found = sorted(ids)
        spelled = zip(found, tokenizer.special_bytes(found), strict=True)
        return tuple((i, p) for i, p in spelled if p)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


def with_projector_or_not(
    load: Callable[[Path | None], Any], file: str, chosen: str | None, reached: Callable[[], float]
) -> tuple[Any, HarmonyDeskError | None]:
    """`load(projector)` with the model's projector (see the module guarantees); when that
    projector cannot be used, `load(None)`: the model's info, and the projector's error (None
    when it loaded as asked)."""
    from app.library.projectors import projector_for

    try:
        projector = projector_for(file, chosen)
    except InvalidInputError as exc:  # the chosen file is gone
        return load(None), exc
    try:
        return load(projector), None
    except ModelLoadError as exc:
        if projector is None or exc.problem is not LoadProblem.LOAD_FAILED or reached() < 1.0:
            raise
        try:
            return load(None), exc
        except ModelLoadError as again:
            raise (again if again.problem is LoadProblem.CANCELLED else exc) from None


def text_only(off: HarmonyDeskError) -> str:
    """The sentence for a model loaded without the projector it was to have (`off`: why)."""
    said = off.message.rstrip(".")
    said = said[:1].upper() + said[1:]
    return (
        f"{said}. The model was loaded without the projector instead, for text only: images"
        " are off until one that fits it is there or chosen (Model settings ▸ Projector)."
    )


def _marker_shaped(piece: bytes) -> bool:
    return len(piece) > 4 and piece.startswith(b"<|") and piece.endswith(b"|>")


__all__ = ["ModelChoice", "ModelHost", "RecentModels"]
