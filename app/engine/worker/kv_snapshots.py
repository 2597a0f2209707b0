"""The worker's KV snapshots: a conversation's cache kept in RAM and on disk, restored exactly.

Guarantees:
- `keep(keep)` runs after a generation's reply was sent: it copies the sequence's state
  (llama.cpp's per-sequence state API) into RAM at once (the last `RAM_ENTRIES`, at most
  `RAM_BYTES` together) and, for a conversation, writes it to disk on a background thread once
  the model file's content hash is known (computed once on a thread, remembered in
  `models.json` by path, size and modification time), then holds the folder to its cap. A
  conversation keeps its `PER_TAG` newest files. A write that fails (a full disk) is logged and
  nothing else changes.
- `restore(prompt, live, keep)` looks for the snapshot (RAM first, then the conversation's
  files) that holds the longest prefix of the prompt, all but its last token, and more of it
  than the live cache does, cut back to that prefix. After setting the state, llama.cpp's own
  positions are checked as a rollback checks them; a state llama.cpp refuses or that fails the
  check leaves the cache cleared. It answers None when it did not touch the cache, else
  `Restored` (count 0: the cache was cleared).
- Only models that attend to their whole context on every layer have snapshots
  (`snapshots_for`): llama.cpp's state API (llama-cpp-python 0.3.36) does not give a
  sliding-window model (Gemma 3, gpt-oss) back the state it saved once a conversation passes
  the window — measured on Gemma 3 270M, the next logits were off by up to 2.3, whichever API
  (per sequence or whole context) and wherever the restore was cut (llama.cpp issue 25295) —
  so such a model is evaluated again, never continued from a wrong state;
  `tests/engine/test_kv_snapshots.py` fails once llama.cpp restores them exactly.
- Every file is checked before its state reaches llama.cpp (`snapshot_file.py`): a
  damaged, cut-short, foreign or mismatched one is logged, removed and never used.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import app.kvcache as kvcache
from app.domain.placement import Placement
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker import snapshot_file as files
from app.engine.worker.snapshot_file import Stamp
from app.errors import HarmonyDeskError
from app.fileio import write_atomic_bytes

log = logging.getLogger("engine")

RAM_ENTRIES = 4
RAM_BYTES = 1 << 30
PER_TAG = 2
MIN_TOKENS = 16  # a shorter state is evaluated again in less time than it takes to keep


@dataclass(frozen=True)
class Restored:
    count: int
    source: str  # "memory" or "disk"; "" when nothing was restored


@dataclass(frozen=True)
class _Held:
    tag: str
    template: str  # (the model is the loaded one: a held state dies with its load)
    tokens: tuple[int, ...]
    state: bytes


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def model_digest(path: str, memo: Path | None) -> str:
    """The sha256 of the model file, remembered in `memo` by path, size and modification time."""
    st = os.stat(path)
    key = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}"
    known: dict[str, str] = {}
    if memo is not None:
        with contextlib.suppress(OSError, ValueError):
            known = dict(json.loads(memo.read_text()))
        if key in known:
            return known[key]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 23):
            digest.update(block)
    known[key] = digest.hexdigest()
    if memo is not None:
        with contextlib.suppress(HarmonyDeskError, OSError):
            write_atomic_bytes(memo, json.dumps(known, indent=1).encode())
    return known[key]


def snapshots_for(
    llm: Any,
    low: Any,
    settings: SnapshotSettings,
    placement: Placement,
    holds: Callable[[int, int], bool],
    projector: str = "",
) -> Snapshots | None:
    """The snapshots of a loaded model, or None for a model with a sliding window (above)."""
    window = placement.sliding_window
    if window:
        log.info(
            "KV snapshots are off for this model: llama.cpp cannot restore the state of a"
            " model with a %d-token sliding window exactly",
            window,
        )
        return None
    build = f"llama-cpp-python {llm_build(low)}, state v{low.LLAMA_STATE_SEQ_VERSION}"

    def stamp(model_sha256: str, template: str) -> Stamp:
        p, n_ctx = placement, int(low.llama_n_ctx_seq(llm._ctx.ctx))  # one sequence's
        return Stamp(
            model_sha256, n_ctx, p.kv_type, p.flash_attn, p.swa_full, template, build, projector
        )

    return Snapshots(llm, low, settings, stamp, holds)


def llm_build(low: Any) -> str:
    """llama-cpp-python's version (the build of llama.cpp it carries)."""
    import llama_cpp

    return str(llama_cpp.__version__)


class Snapshots:
    """The snapshots of the model loaded in `llm` (one per worker load)."""

    def __init__(
        self,
        llm: Any,
        low: Any,
        settings: SnapshotSettings,
        stamp: Callable[[str, str], Stamp],
        holds: Callable[[int, int], bool],
    ) -> None:
        self.llm, self.low, self.settings = llm, low, settings
        self.root = Path(settings.folder) if settings.folder else None
        self._stamp = stamp  # (model sha256, template) → the stamp
        self._holds = holds
        self._ram: collections.OrderedDict[tuple[str, str], _Held] = collections.OrderedDict()
        self._digest = ""
        self._digest_ready = threading.Event()
        self._writes: list[threading.Thread] = []
        if self.root is None:  # RAM only: the model's hash is never needed
            self._digest_ready.set()
        else:
            threading.Thread(target=self._hash, daemon=True, name="model-digest").start()

    def _hash(self) -> None:
        try:
            memo = self.root / "models.json" if self.root is not None else None
            self._digest = model_digest(self.llm.model_path, memo)
        except OSError as exc:
            log.warning("the model file cannot be hashed (%s): no KV snapshots on disk", exc)
        finally:
            self._digest_ready.set()

    def stamp(self, template: str) -> Stamp:
        """The stamp for `template` (the model hash is "" until known: RAM only until then)."""
        return self._stamp(self._digest, template)

    # --- keeping --------------------------------------------------------------------

    def keep(self, keep: Keep, seq: Any) -> None:
        """Keep the current state of sequence `seq`'s cache for `keep.conversation` (see the
        guarantees)."""
        n = len(seq.tokens)
        if n < MIN_TOKENS or not self._holds(seq.id, n):
            return
        tokens = tuple(seq.tokens)
        key = (keep.conversation, files.token_digest(tokens))
        if key in self._ram:
            self._ram.move_to_end(key)
            return
        state = self._copy_state(seq.id)
        if state is None:
            return
        self._ram[key] = _Held(keep.conversation, keep.template, tokens, state)
        while (
            len(self._ram) > RAM_ENTRIES
            or sum(len(h.state) for h in self._ram.values()) > RAM_BYTES
        ):
            self._ram.popitem(last=False)
        if self.root is not None and kvcache.valid_tag(keep.conversation):
            writer = threading.Thread(
                target=self._write, args=(keep, tokens, state), name="kv-snapshot-write"
            )
            self._writes = [t for t in self._writes if t.is_alive()] + [writer]
            writer.start()

    def _copy_state(self, seq: int) -> bytes | None:
        ctx = self.llm._ctx.ctx
        size = int(self.low.llama_state_seq_get_size(ctx, seq))
        if size <= 0:
            return None
        buffer = (ctypes.c_uint8 * size)()
        written = int(self.low.llama_state_seq_get_data(ctx, buffer, size, seq))
        return ctypes.string_at(buffer, written) if written > 0 else None

    def _write(self, keep: Keep, tokens: tuple[int, ...], state: bytes) -> None:
        self._digest_ready.wait()
        if not self._digest or self.root is None:
            return
        stamp = self.stamp(keep.template)
        try:
            path = files.write(self.root, keep.conversation, stamp, tokens, state)
        except HarmonyDeskError as exc:
            log.warning("a KV snapshot could not be saved: %s", exc.message)
            return
        older = sorted(
            (p for p in kvcache.files(self.root, keep.conversation) if p != path), key=_used
        )
        for stale in older[: max(0, len(older) - (PER_TAG - 1))]:
            stale.unlink(missing_ok=True)
        kvcache.enforce_cap(self.root, self.settings.cap_bytes)

    def flush(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds in all) for the snapshots being written."""
        for writer in self._writes:
            writer.join(timeout)

    # --- restoring ------------------------------------------------------------------

    def restore(self, prompt: Sequence[int], live: int, keep: Keep, seq: Any) -> Restored | None:
        """Restore the best snapshot for `prompt` into sequence `seq` (see the guarantees)."""
        wanted, best = prompt[:-1], _Candidate(max(live, MIN_TOKENS - 1), "", (), _none)
        for held in reversed(self._ram.values()):
            if held.tag == keep.conversation and held.template == keep.template:
                best = best.or_better(wanted, held.tokens, "memory", _const(held.state))
        if best.source != "memory":
            for head in self._heads(keep, best.shared):
                best = best.or_better(wanted, head.tokens, "disk", _reader(head))
        state = best.read()
        if state is None:
            return None
        count = self._set(state, best.tokens, best.shared, seq)
        return Restored(count, best.source if count else "")

    def _heads(self, keep: Keep, beaten: int) -> list[files.Head]:
        """The usable snapshot files of `keep`'s conversation that hold more than `beaten`
        tokens (a file's name says how many: a follow-up turn, whose live cache holds more
        than any file, reads none and waits for nothing); the model's hash is awaited when
        there are any (it is remembered: only a model hashed for the first time waits)."""
        if self.root is None or not kvcache.valid_tag(keep.conversation):
            return []
        found = [
            p
            for p in kvcache.files(self.root, keep.conversation)
            if (kvcache.held(p) or beaten + 1) > beaten
        ]  # (a name not ours: read, refused, removed)
        if not found:
            return []
        self._digest_ready.wait()
        if not self._digest:
            return []
        stamp = self.stamp(keep.template)
        return [h for h in (files.read_head(p, stamp) for p in found) if h is not None]

    def _set(self, state: bytes, tokens: tuple[int, ...], count: int, seq: Any) -> int:
        """Put `state` into sequence `seq`'s cache and keep its first `count` tokens; the count
        kept (0: llama.cpp refused it or its positions are not what they should be: cleared)."""
        ctx, low = self.llm._ctx.ctx, self.low
        memory = low.llama_get_memory(ctx)
        low.llama_memory_seq_rm(memory, seq.id, -1, -1)
        seq.tokens = []
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if int(low.llama_state_seq_set_data(ctx, buffer, len(state), seq.id)) > 0:
            cut = bool(low.llama_memory_seq_rm(memory, seq.id, count, -1))
            if cut and self._holds(seq.id, count):
                seq.tokens = list(tokens[:count])
                return count
        log.info("a KV snapshot was refused by llama.cpp or held other positions; evaluated again")
        low.llama_memory_seq_rm(memory, seq.id, -1, -1)
        return 0


@dataclass(frozen=True)
class _Candidate:
    """A snapshot that holds the first `shared` tokens of the prompt (`read` gives its state)."""

    shared: int
    source: str
    tokens: tuple[int, ...]
    read: Callable[[], bytes | None]

    def or_better(
        self,
        wanted: Sequence[int],
        tokens: tuple[int, ...],
        source: str,
        read: Callable[[], bytes | None],
    ) -> _Candidate:
        """This one, or the snapshot of `tokens` when it holds more of `wanted`."""
        shared = common_prefix(tokens, wanted)  # a snapshot is cut back to what is shared
        return _Candidate(shared, source, tokens, read) if shared > self.shared else self


def _used(path: Path) -> float:
    """When a snapshot file was last used (0: removed meanwhile, by a cap or a forget)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _none() -> bytes | None:
    return None


def _const(state: bytes) -> Callable[[], bytes | None]:
    return lambda: state


def _reader(head: files.Head) -> Callable[[], bytes | None]:
    return lambda: files.read_state(head)
