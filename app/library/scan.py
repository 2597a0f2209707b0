"""Finding models: every GGUF in the models folders, described from its header alone.

Guarantees: a split model (`NAME-00001-of-0000N.gguf`) is one entry, found by its parts'
names, its size and parameters those of all parts; a missing part or an unreadable file is
listed with a sentence saying why, never dropped silently; partial downloads are not models;
a header is read once per file version (a cache keyed by path, size and modification time,
in the cache folder), so rescanning an unchanged folder reads no header; folders are walked
four levels deep (publisher/model/file layouts), without following links to folders or hidden
folders; a link leading out of the folder added is followed only to a GGUF model (a model
linked into the folder): a link out to anything else (`/etc/passwd`) or to a folder is listed
with a sentence saying so, and nothing of it is read beyond the four bytes that say it is not
a model.
`listing` adds what the picker shows: each model's card (friendly name, capabilities, read
from the same header and cached with it), where it was found (bundled, a models folder, the
recent files), the bundled models whether assembled or not. Image projectors (`mmproj` GGUFs,
`projectors.is_projector`) are never listed as models, by `scan` or `listing`: `listing`
pairs each model with its projector instead (`projectors.projector_for`, with the projector
chosen for it: None = the one in its folder, "" = none, else a path), and its card says
`vision` exactly when it has one; a chosen projector that is gone is said (`Found.unpaired`),
never an error that hides the model.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NamedTuple

from app.domain.library import ModelEntry
from app.errors import HarmonyDeskError, InvalidInputError
from app.fileio import OutputError, write_atomic
from app.gguf.info import SPLIT_NAME, GgufInfo, model_parts, read_model
from app.inputs import open_regular
from app.library.bundled import Bundled, bundled_header
from app.library.cards import ModelCard, card_of, strip_quant
from app.library.projectors import Projectors
from app.paths import cache_dir
from app.readback import read_back
from app.templates.registry import default_template_name

log = logging.getLogger("library")
MAX_DEPTH = 4
_CACHE_VERSION = 3  # 3: cards say whether a model is a base model
CACHE_LIMIT = 64 << 20  # bytes: a few kilobytes a model


class Found(NamedTuple):
    """A model `listing` found: its entry, its card, where (bundled, folder, recent), and the
    image projector that loads with it."""

    entry: ModelEntry
    card: ModelCard
    where: str
    projector: str = ""  # its projector's path ("": it sees no images)
    unpaired: str = ""  # why the projector chosen for it cannot be used (its file is gone)


def describe(
    path: str | Path, *, bundled: bool = False, sig: list[list[int]] | None = None
) -> ModelEntry:
    """The library entry of the model whose first (or only) file is `path` (`sig`: its parts'
    `signature`, when the caller has it already)."""
    return _read(path, bundled, sig)[0]


def _read(
    path: str | Path, bundled: bool, sig: list[list[int]] | None, model: Bundled | None = None
) -> tuple[ModelEntry, ModelCard]:
    parts = model_parts(path) if model is None else (model.path,)
    name = _display_name(Path(path))
    sig = sig if sig is not None else signature(parts)
    size = sum(s for s, _ in sig if s > 0)
    modified = max((m for _, m in sig), default=0) / 1e9
    try:
        info = read_model(path) if model is None else bundled_header(model)
        entry = _entry(info, name, parts, size, modified, bundled)
    except HarmonyDeskError as exc:
        reason = getattr(exc, "reason", exc.message)
        entry = ModelEntry(name, str(path), _names(parts), size, modified, problem=reason)
        return entry, ModelCard(strip_quant(Path(path).name))
    return entry, card_of(info.metadata, path, model.title if model is not None else "")


def _entry(
    info: GgufInfo, name: str, parts: tuple[Path, ...], size: int, modified: float, bundled: bool
) -> ModelEntry:
    problem = "" if info.architecture else "its header names no architecture"
    if info.architecture == "clip":
        problem = "it is an image projector (mmproj) for another model, not a model itself"
    return ModelEntry(
        name=name,
        path=str(parts[0]),
        files=_names(parts),
        file_size=size,
        modified=modified,
        architecture=info.architecture,
        parameters=info.parameter_count,
        quantization=info.quantization,
        context_length=info.context_length,
        vocab_size=info.vocab_size,
        has_chat_template=bool(info.chat_template),
        template=default_template_name(info.metadata),
        weights_bytes=info.weights_bytes,
        kv_bytes_per_token=info.kv_bytes_per_token,
        layers=info.int_value("block_count"),
        problem=problem,
        bundled=bundled,
    )


def _display_name(path: Path) -> str:
    m = SPLIT_NAME.match(path.name)
    return m["stem"] if m else path.stem


def _names(parts: Iterable[Path]) -> tuple[str, ...]:
    return tuple(str(p) for p in parts)


def signature(parts: Iterable[Path]) -> list[list[int]]:
    """[size, mtime_ns] of each part ([-1, -1] for one that is not there)."""
    out = []
    for p in parts:
        try:
            st = p.stat()
        except OSError:
            out.append([-1, -1])
            continue
        out.append([st.st_size, st.st_mtime_ns])
    return out


def model_files(folder: Path, skipped: list[ModelEntry] | None = None) -> Iterator[Path]:
    """The first (or only) file of every model under `folder`; a split model whose first
    part is missing is named by the first part it should have. A file whose real path lies
    outside `folder` (a link leading out) is one only when it is a GGUF model (a model linked
    into the folder); any other (a link to `/etc/passwd`), and a linked folder leading out,
    are added to `skipped`, when given, as an entry whose problem says so, and never read."""
    root = folder.resolve()
    seen: set[Path] = set()
    links: list[Path] = []
    for path in _gguf_files(folder, links):
        parts = model_parts(path)
        if parts[0] in seen:
            continue
        seen.add(parts[0])
        out = next((p for p in parts if _outside(p, root) and not _is_gguf(p)), None)
        if out is None:
            yield parts[0]
        elif skipped is not None:
            said = f"its file {out.name} is a link to {out.resolve()}, outside {folder}"
            skipped.append(_skipped(parts[0], f"{said}, and not a model"))
    for link in links:
        if skipped is not None and _outside(link, root):
            said = f"this folder is a link to {link.resolve()}, outside {folder}: not looked in"
            skipped.append(_skipped(link, f"{said} (add that folder to use its models)"))


def _outside(path: Path, root: Path) -> bool:
    """Whether `path`, links followed, lies outside the folder `root` (resolved)."""
    real = Path(os.path.realpath(path))
    return real != root and root not in real.parents


def _is_gguf(path: Path) -> bool:
    """Whether `path` is a regular file that starts as a GGUF does (4 bytes read, never
    blocking: `inputs.open_regular`)."""
    try:
        fd, _ = open_regular(path)
    except (OSError, InvalidInputError):
        return False
    with os.fdopen(fd, "rb") as f:
        return f.read(4) == b"GGUF"


def _skipped(path: Path, said: str) -> ModelEntry:
    return ModelEntry(_display_name(path), str(path), (str(path),), 0, problem=said)


def _gguf_files(folder: Path, links: list[Path]) -> Iterator[Path]:
    """The GGUF files under `folder` (links to folders are never followed: added to `links`)."""
    root_depth = len(folder.parts)
    for here, dirs, files in os.walk(folder, followlinks=False):
        depth = len(Path(here).parts) - root_depth
        links += [Path(here) / d for d in dirs if os.path.islink(os.path.join(here, d))]
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < MAX_DEPTH)
        for name in sorted(files):
            if name.lower().endswith(".gguf") and not name.startswith("."):
                yield Path(here) / name


class ScanCache:
    """Entries already read, keyed by the first file's path, valid while every part's size
    and modification time are unchanged."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir() / "library-scan.json"
        self._data = self._read()
        self._dirty = False

    def _read(self) -> dict[str, Any]:
        data = read_back(self.path, CACHE_LIMIT)
        if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
            return {}  # none, set aside, or another version's: the headers are read again
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}

    def get(self, first: Path, bundled: bool = False) -> ModelEntry:
        return self.read(first, bundled)[0]

    def read(self, first: Path, bundled: bool = False) -> tuple[ModelEntry, ModelCard]:
        """The entry and card of the model whose first file is `first` (cached)."""
        return self._cached(str(first), signature(model_parts(first)), bundled, first, None)

    def read_bundled(self, model: Bundled) -> tuple[ModelEntry, ModelCard]:
        """A bundled model's entry and card (Gemma read from its chunks until assembled)."""
        key = f"bundled:{model.path}"  # its card carries the bundled name
        return self._cached(key, signature(model.sources), True, model.path, model)

    def _cached(
        self, key: str, sig: list[list[int]], bundled: bool, first: Path, model: Bundled | None
    ) -> tuple[ModelEntry, ModelCard]:
        known = self._data.get(key)
        if isinstance(known, dict) and known.get("sig") == sig:
            try:
                entry = ModelEntry(**{**known["entry"], "files": tuple(known["entry"]["files"])})
                card = ModelCard(**known["card"])
            except (TypeError, KeyError):
                entry = None
            if entry is not None and entry.bundled == bundled:
                return entry, card
        entry, card = _read(first, bundled, sig, model)
        self._data[key] = {"sig": sig, "entry": asdict(entry), "card": asdict(card)}
        self._dirty = True
        return entry, card

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps({"version": _CACHE_VERSION, "entries": self._data}))
            self._dirty = False
        except (OSError, OutputError) as exc:  # only a cache: the next scan reads headers again
            log.warning("could not save the library's scan cache: %s", exc)


def scan(
    folders: Iterable[Path], *, bundled: Path | None = None, cache: ScanCache | None = None
) -> list[ModelEntry]:
    """Every model in `folders` (and the bundled default model when it is assembled), by name."""
    cache = cache or ScanCache()
    entries: dict[str, ModelEntry] = {}
    if bundled is not None and bundled.is_file():
        entries[str(bundled)] = cache.get(bundled, bundled=True)
    for folder in folders:
        if not folder.is_dir():
            continue
        skipped: list[ModelEntry] = []
        for first in model_files(folder, skipped):
            if str(first) not in entries:
                entries[str(first)] = cache.get(first)
        entries.update((e.path, e) for e in skipped if e.path not in entries)
    cache.save()
    models = (e for e in entries.values() if not is_projector_entry(e))
    return sorted(models, key=lambda e: (not e.bundled, e.name.lower(), e.path))


def is_projector_entry(entry: ModelEntry) -> bool:
    """Whether a scanned file is an image projector (`projectors.is_projector`, from what the
    scan read already): the `clip` architecture, or a header that cannot be read and a name
    starting with `mmproj`."""
    unread = bool(entry.problem) and not entry.architecture
    return entry.architecture == "clip" or (
        unread and Path(entry.path).name.lower().startswith("mmproj")
    )


def _no_choice(_model: str) -> str | None:
    return None


def listing(
    folders: Iterable[Path],
    *,
    bundled: Iterable[Bundled] = (),
    recent: Iterable[str | Path] = (),
    cache: ScanCache | None = None,
    chosen: Callable[[str], str | None] = _no_choice,
) -> list[Found]:
    """Every model the app can be asked to load: the bundled ones, those in `folders`, and the
    `recent` files that are still there, each with its projector (`chosen(path)`: the one
    chosen for it; see the module guarantees); the bundled first (the default model first),
    then by name."""
    cache = cache or ScanCache()
    found: dict[str, tuple[ModelEntry, ModelCard, str]] = {}
    for model in bundled:
        entry, card = cache.read_bundled(model)
        found[str(model.path)] = (entry, card, "bundled")
    skipped: list[ModelEntry] = []
    for folder in folders:
        if folder.is_dir():
            for first in model_files(folder, skipped):
                if str(first) not in found:
                    found[str(first)] = (*cache.read(first), "folder")
    for path in recent:
        first = model_parts(path)[0]
        if str(first) not in found and first.is_file():
            found[str(first)] = (*cache.read(first), "recent")
    cache.save()
    pairs = Projectors()
    out = [
        _paired(entry, card, where, pairs, chosen)
        for entry, card, where in found.values()
        if not is_projector_entry(entry)
    ]
    out += [
        Found(e, ModelCard(strip_quant(Path(e.path).name)), "folder")
        for e in skipped
        if e.path not in found
    ]  # said, never read: their files lie outside the folder added
    rest = sorted(
        (f for f in out if f.where != "bundled"), key=lambda f: (f.card.title.lower(), f.entry.path)
    )
    return [f for f in out if f.where == "bundled"] + rest  # the bundled ones in their own order


def _paired(
    entry: ModelEntry,
    card: ModelCard,
    where: str,
    pairs: Projectors,
    chosen: Callable[[str], str | None],
) -> Found:
    """The model with its projector, and its card's `vision` saying whether it has one."""
    try:
        projector = pairs.pair(entry.path, chosen(entry.path))
    except InvalidInputError as exc:
        return Found(entry, replace(card, vision=False), where, "", exc.message)
    return Found(entry, replace(card, vision=projector is not None), where, str(projector or ""))
