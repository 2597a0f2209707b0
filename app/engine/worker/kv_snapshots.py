"""The worker's KV snapshots and prompt cache: states of a sequence's cache kept in RAM and on
disk, restored exactly, for conversations and for any client.

Guarantees:
- `keep(keep, seq)` copies the sequence's state (llama.cpp's per-sequence state API) into RAM
  (the newest `RAM_ENTRIES`, at most `SnapshotSettings.ram_bytes` together; least recently used
  first out). A conversation's state is also written to disk at once, on a background thread,
  once the model file's content hash is known (computed once on a thread, remembered in
  `models.json` by path, size and modification time, under a MAC); the conversation keeps its
  `PER_TAG` newest files. A state kept for a client's prompt (`kvcache.prompt_tag`: no
  conversation) is written when it leaves RAM and when the model is unloaded (a restart), the
  most recent first, so the prompt cache survives a restart. The folder is then held to its
  cap. A write that fails (a full disk) is logged and nothing else changes. On a model without
  a sliding window a kept state makes the same tenant's states it extends redundant: they leave
  RAM.
- `restore(prompt, live, keep, seq)` looks for the state that holds the longest prefix of the
  prompt, all but its last token, and more of it than the live cache does, among the RAM states
  of the same tenant and template (any conversation: two chats or two agents that share their
  instructions share them here), then the files of the conversation and of the tenant's prompt
  cache; it is cut back to that prefix. Reuse never crosses tenants (`Keep.tenant`): another API
  key's states are neither restored nor visible in timings. After setting the state, llama.cpp's
  own positions are checked as a rollback checks them; a state llama.cpp refuses or that fails
  the check leaves the cache cleared. It answers None when it did not touch the cache, else
  `Restored` (count 0: the cache was cleared).
- Sliding-window models (Gemma 3, gpt-oss) keep states only with the full-size window cache
  (`swa_full`): llama.cpp writes such a state without the cells outside the window and reads it
  back into other cells than a fresh evaluation used, which moves the logits (by up to 2.3 on
  Gemma 3); `state_layout.anchored` lays it back exactly as the evaluation had it, so restores
  are bit-exact. Such a state can only be cut back where the window of the next token lies
  within its real cells (`state_layout.cuttable`), so the scheduler also keeps one when the
  prompt has been read (a regenerated answer or a next turn that drops the analysis restores
  it). A kept state also carries its sequence's context checkpoints (`checkpoints.py`): cut
  back to the latest one at or before where a prompt leaves it, with that checkpoint's window
  part laid over it, it is the state the read had there (restored as "memory"). Their bytes
  count in `SnapshotSettings.ram_bytes` with the states'. With the small window cache no state
  is kept: what cannot be restored exactly is evaluated. `tests/engine/test_kv_windowed.py`
  pins llama.cpp's inexact restore; `tests/engine/test_kv_checkpoints.py` the checkpoints.
- Files live in this key's own folder in `SnapshotSettings.folder` (`kvcache.key_root`):
  another key's folder is never opened, and its files never count in this one's cap; files
  of the layout before keys had folders are moved into it when this key's MACs prove them its
  own, the others left alone (`snapshot_adopt.py`, on the hashing thread, before any restore
  looks for a file).
- Every file is checked and authenticated before its state reaches llama.cpp
  (`snapshot_file.py`: bounded, non-blocking, an HMAC under the install's key handed over with
  the load, `SnapshotSettings.key`): a malformed, cut-short, forged or another conversation's
  one is logged, set aside and never used, an authentic one made for another model or build is
  removed; the prompt is then evaluated. Without a key nothing is kept on disk (RAM only,
  said in the log); the worker never reads the keyring.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import app.kvcache as kvcache
from app.domain.placement import Placement
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker import checkpoints as points
from app.engine.worker import snapshot_file as files
from app.engine.worker import state_layout
from app.engine.worker.checkpoints import Checkpoint
from app.engine.worker.kv_candidates import Candidate, common_prefix
from app.engine.worker.snapshot_adopt import adopt
from app.engine.worker.snapshot_file import Stamp
from app.errors import HarmonyDeskError

log = logging.getLogger("engine")

RAM_ENTRIES = 64
PER_TAG = 2
MIN_TOKENS = 16  # a shorter state is evaluated again in less time than it takes to keep
SPILL_S = 4.0  # what an unload may spend writing the prompt cache to disk


@dataclass(frozen=True)
class Restored:
    count: int
    source: str  # "memory" or "disk"; "" when nothing was restored


@dataclass(frozen=True)
class _Held:
    tag: str  # the conversation, or the tenant's prompt cache, the state is kept for
    tenant: str
    template: str  # (the model is the loaded one: a held state dies with its load)
    tokens: tuple[int, ...]
    state: bytes
    points: tuple[Checkpoint, ...] = field(default=(), repr=False)  # its read's checkpoints


__all__ = ["Restored", "Snapshots", "common_prefix", "snapshots_for"]


def snapshots_for(
    llm: Any,
    low: Any,
    settings: SnapshotSettings,
    placement: Placement,
    holds: Callable[[int, int], bool],
    projector: str = "",
) -> Snapshots | None:
    """The snapshots of a loaded model, or None for a sliding-window model with the small
    window cache (see the guarantees)."""
    window = placement.sliding_window
    if window and not placement.swa_full:
        log.info(
            "KV snapshots are off for this model: its %d-token sliding window has the small"
            " cache, whose state llama.cpp cannot restore exactly",
            window,
        )
        return None
    build = f"llama-cpp-python {llm_build(low)}, state v{low.LLAMA_STATE_SEQ_VERSION}"

    def stamp(model_sha256: str, template: str) -> Stamp:
        p, n_ctx = placement, int(low.llama_n_ctx_seq(llm._ctx.ctx))  # one sequence's
        return Stamp(
            model_sha256,
            n_ctx,
            p.kv_type,
            p.flash_attn,
            p.swa_full,
            template,
            build,
            projector,
            p.rope_words(),
        )

    return Snapshots(llm, low, settings, stamp, holds, window)


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
        window: int = 0,
    ) -> None:
        self.llm, self.low, self.settings = llm, low, settings
        self.window = window  # the model's sliding window (0: none)
        self.base = Path(settings.folder) if settings.folder and settings.key else None
        self.root = kvcache.key_root(self.base, settings.key) if self.base is not None else None
        if settings.folder and not settings.key:
            log.warning("KV snapshots stay in RAM: no key was given to authenticate their files")
        self._stamp = stamp  # (model sha256, template) → the stamp
        self._holds = holds
        self._ram: collections.OrderedDict[tuple[str, str], _Held] = collections.OrderedDict()
        self._digest = ""
        self._digest_ready = threading.Event()
        self._adopted = threading.Event()  # the old layout's files of this key are in `root`
        self._writes: list[threading.Thread] = []
        if self.root is None:  # RAM only: the model's hash is never needed
            self._adopted.set()
            self._digest_ready.set()
        else:
            threading.Thread(target=self._hash, daemon=True, name="model-digest").start()

    @property
    def checkpoints(self) -> bool:
        """Whether a state is also kept once a prompt has been read (see the guarantees)."""
        return self.window > 0

    def _hash(self) -> None:
        try:
            self._adopt()
            memo = self.root / "models.json" if self.root is not None else None
            self._digest = files.model_digest(self.llm.model_path, memo, self.settings.key)
        except OSError as exc:
            log.warning("the model file cannot be hashed (%s): no KV snapshots on disk", exc)
        finally:
            self._digest_ready.set()

    def _adopt(self) -> None:
        try:
            if self.base is not None and self.root is not None:
                adopt(self.base, self.root, self.settings.key, self.settings.cap_bytes)
        finally:
            self._adopted.set()

    def stamp(self, template: str) -> Stamp:
        """The stamp for `template` (the model hash is "" until known: RAM only until then)."""
        return self._stamp(self._digest, template)

    # --- keeping --------------------------------------------------------------------

    def keep(self, keep: Keep, seq: Any) -> None:
        """Keep the current state of sequence `seq`'s cache for `keep` (see the guarantees)."""
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
        held = _Held(keep.conversation, keep.tenant, keep.template, tokens, state, seq.checkpoints)
        if not self.window:
            for old, was in list(self._ram.items()):
                if _same_reader(was, held) and tokens[: len(was.tokens)] == was.tokens:
                    del self._ram[old]  # (its file, if any, stays: a cap removes it)
        self._ram[key] = held
        gone = []
        while len(self._ram) > RAM_ENTRIES or self._ram_bytes() > self.settings.ram_bytes:
            gone.append(self._ram.popitem(last=False)[1])
        if kvcache.is_prompt_tag(held.tag):
            for left in gone:
                if kvcache.is_prompt_tag(left.tag):
                    self._write_later(left)
        else:
            self._write_later(held)

    def _ram_bytes(self) -> int:
        """The kept states' bytes and their checkpoints' (each counted once)."""
        shared = {id(p): p.size for h in self._ram.values() for p in h.points}
        return sum(len(h.state) for h in self._ram.values()) + sum(shared.values())

    def _copy_state(self, seq: int) -> bytes | None:
        ctx = self.llm._ctx.ctx
        size = int(self.low.llama_state_seq_get_size(ctx, seq))
        if size <= 0:
            return None
        buffer = (ctypes.c_uint8 * size)()
        written = int(self.low.llama_state_seq_get_data(ctx, buffer, size, seq))
        return ctypes.string_at(buffer, written) if written > 0 else None

    def _write_later(self, held: _Held) -> None:
        if self.root is None or not kvcache.valid_tag(held.tag):
            return
        writer = threading.Thread(target=self._write, args=(held,), name="kv-snapshot-write")
        self._writes = [t for t in self._writes if t.is_alive()] + [writer]
        writer.start()

    def _write(self, held: _Held) -> None:
        self._digest_ready.wait()
        if not self._digest or self.root is None:
            return
        stamp = self.stamp(held.template)
        try:
            path = files.write(
                self.root, held.tag, stamp, held.tokens, held.state, self.settings.key
            )
        except HarmonyDeskError as exc:
            log.warning("a KV snapshot could not be saved: %s", exc.message)
            return
        if not kvcache.is_prompt_tag(held.tag):
            older = sorted((p for p in kvcache.files(self.root, held.tag) if p != path), key=_used)
            for stale in older[: max(0, len(older) - (PER_TAG - 1))]:
                stale.unlink(missing_ok=True)
        kvcache.enforce_cap(self.root, self.settings.cap_bytes)

    def flush(self, timeout: float) -> None:
        """Write the prompt cache's states not yet on disk (the most recent first, for at most
        `SPILL_S`), and wait (at most `timeout` seconds in all) for the writes under way."""
        deadline = time.monotonic() + SPILL_S
        if self.root is not None and self._digest_ready.wait(SPILL_S):
            for held in reversed(list(self._ram.values())):
                if time.monotonic() > deadline:
                    break
                if kvcache.is_prompt_tag(held.tag):
                    self._write(held)
        for writer in self._writes:
            writer.join(timeout)

    # --- restoring ------------------------------------------------------------------

    def restore(self, prompt: Sequence[int], live: int, keep: Keep, seq: Any) -> Restored | None:
        """Restore the best state for `prompt` into sequence `seq` (see the guarantees)."""
        wanted, usable = prompt[:-1], self._usable
        best = Candidate(max(live, MIN_TOKENS - 1))
        for held in reversed(self._ram.values()):
            if held.tenant == keep.tenant and held.template == keep.template:
                read = _const(held.state)
                best = best.or_better(wanted, held.tokens, "memory", read, usable, held.points)
        if best.source != "memory":
            for head in self._heads(keep, best.shared):
                read = _reader(head, self.settings.key)
                best = best.or_better(wanted, head.tokens, "disk", read, usable)
        state = best.read()
        if state is None:
            return None
        count = self._set(state, best, seq)
        return Restored(count, best.source if count else "")

    def _usable(self, tokens: Sequence[int], count: int) -> bool:
        """Whether a state of `tokens` may be cut back to `count` (a window's limit)."""
        if not self.window:
            return True
        return state_layout.cuttable(count, max(0, len(tokens) - self.window), self.window)

    def _heads(self, keep: Keep, beaten: int) -> list[files.Head]:
        """The usable files of `keep`'s conversation and of its tenant's prompt cache that hold
        more than `beaten` tokens (a file's name says how many: a follow-up turn, whose live
        cache holds more than any file, reads none and waits for nothing); the model's hash is
        awaited when there are any (it is remembered: only a model hashed for the first time
        waits)."""
        if self.root is None:
            return []
        self._adopted.wait()  # (only the first look of a load after an upgrade waits)
        tags = {keep.conversation, kvcache.prompt_tag(keep.tenant)}
        found = [
            (tag, p)
            for tag in sorted(tags)
            if kvcache.valid_tag(tag)
            for p in kvcache.files(self.root, tag)
            if (kvcache.held(p) or beaten + 1) > beaten
        ]  # (a name not ours: read, refused, set aside)
        if not found:
            return []
        self._digest_ready.wait()
        if not self._digest:
            return []
        stamp, key, cap = self.stamp(keep.template), self.settings.key, self.settings.cap_bytes
        heads = (files.read_head(p, stamp, key, tag, cap) for tag, p in found)
        return [h for h in heads if h is not None]

    def _set(self, state: bytes, best: Candidate, seq: Any) -> int:
        """Put `state` into sequence `seq`'s cache and keep its first `best.shared` tokens,
        with `best.point`'s window laid over it; the count kept (0: llama.cpp refused it or
        its positions are not what they should be: cleared)."""
        ctx, low, count = self.llm._ctx.ctx, self.low, best.shared
        if self.window:
            laid = state_layout.anchored(state, self.window)
            if laid is None:
                log.info("a KV state of a sliding-window model has another layout; evaluated")
                return 0
            state = laid
        memory = low.llama_get_memory(ctx)
        low.llama_memory_seq_rm(memory, seq.id, -1, -1)
        seq.tokens, seq.checkpoints = [], ()
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if int(low.llama_state_seq_set_data(ctx, buffer, len(state), seq.id)) > 0:
            cut = bool(low.llama_memory_seq_rm(memory, seq.id, count, -1))
            if best.point is not None:
                cut = cut and points.put(self.llm, low, best.point, seq.id, self.window)
            if cut and self._holds(seq.id, count):
                seq.tokens = list(best.tokens[:count])
                seq.checkpoints = points.below(best.points, count)
                return count
        log.info("a KV snapshot was refused by llama.cpp or held other positions; evaluated again")
        low.llama_memory_seq_rm(memory, seq.id, -1, -1)
        return 0


def _same_reader(a: _Held, b: _Held) -> bool:
    return a.tenant == b.tenant and a.template == b.template


def _used(path: Path) -> float:
    """When a snapshot file was last used (0: removed meanwhile, by a cap or a forget)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _const(state: bytes) -> Callable[[], bytes | None]:
    return lambda: state


def _reader(head: files.Head, key: bytes) -> Callable[[], bytes | None]:
    return lambda: files.read_state(head, key)
