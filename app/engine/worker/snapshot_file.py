"""KV snapshots on disk: the file format (pure: no llama.cpp).

A snapshot is one conversation's KV state as llama.cpp's per-sequence state API wrote it, with
the token ids it holds, so that reopening the conversation restores it instead of evaluating
the prompt again (the worker's side: `app/engine/worker/kv_snapshots.py`).

Guarantees:
- A file is `MAGIC`, a fixed head (`b"head"`, the format `VERSION`, the header's length), a JSON
  header (its `Stamp`: what makes the state valid — the model file's content hash, context
  length, cache type, flash attention, window cache, RoPE scaling, template — as one
  fingerprint, in which a model on its own RoPE keeps the one it had before scaling was;
  llama.cpp's build; the token count; the state's length), the token ids (int32, little-endian),
  the head's MAC, the state, and the file's MAC. Both MACs are HMAC-SHA256 under the install's
  snapshot key (`SnapshotSettings.key`; the app keeps it in the keyring, `app/kvcache.py`), over
  the bytes as written, after the name of the conversation (the folder) the file is kept for: a
  file forged, copied from another conversation or another install, or written by an older
  version never verifies. The file's MAC is computed as the state is written and read.
- Nothing in a file is trusted before it is checked: the path is checked before it is opened (a
  FIFO, a device or a symbolic link is never opened; `kvcache.files` never looks inside a linked
  folder), it is opened non-blocking, its real size is known first, and the header's length
  (at most `MAX_HEADER`), the token count (at most `MAX_TOKENS`) and the state's length must
  fit that size, and the file the caller's bound, before anything is allocated; the header's
  nesting is bounded (`app/inputs.py`).
- `read_head` gives the header and the ids once the head's MAC verifies, `read_state` the state
  once the file's MAC verifies (its head read again, the same). Each is None, with the reason
  logged, unless every part checks: a file that is not a whole, authentic snapshot (malformed,
  cut short, forged, another conversation's or install's, an older version's) is set aside
  (`app/readback.py`: `NAME.kv.unusable-…`, kept for the user, counted in the folder's cap and
  the first to go under it: `app/kvcache.py`); an authentic one made for another build of
  llama.cpp or another model, context, cache, RoPE scaling or template can never be used, and
  is deleted.
- `authentic` says whether a file is a whole snapshot kept for a conversation whose MACs both
  verify under a key, with the same bounds, and never moves, removes or changes it, whatever
  it is (a file of the old layout may be another key's: `snapshot_adopt.py`).
- A file is written atomically, 0600 in 0700 folders, in its conversation's folder within its
  key's folder (`app/kvcache.py`: the folders, the cap and what deletes a conversation's
  snapshots; another key's files are never opened), and
  restored only for its own conversation (its MAC binds it to the folder's name).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from app.errors import HarmonyDeskError, InvalidInputError
from app.fileio import OutputError, private_folder, write_atomic_bytes
from app.inputs import load_json, open_regular
from app.kvcache import SUFFIX
from app.readback import read_back, set_aside

log = logging.getLogger("engine")

MAGIC = b"HDKVSNAP"
VERSION = 2  # 1: no MACs (set aside when found)
_HEAD = struct.Struct("<4sII")  # b"head", format version, header length
_START = len(MAGIC) + _HEAD.size
MAX_HEADER = 1 << 16
MAX_TOKENS = 1 << 24  # ids one file may hold (more than any context)
MAC_BYTES = 32
_DOMAIN = b"harmony-desk KV snapshot\0"
MEMO_LIMIT = 4 << 20  # bytes: the model hashes' memo (`models.json` in the folder)


@dataclass(frozen=True)
class Stamp:
    """What makes a state valid for a loaded model (besides its tokens)."""

    model_sha256: str
    n_ctx: int
    kv_type: str
    flash_attn: bool
    swa_full: bool
    template: str
    build: str  # llama.cpp's build and its state format
    projector: str = ""  # the multimodal projector images went through (name and size)
    rope: str = ""  # the context extension (`Placement.rope_words`); "": the model's own RoPE

    def fingerprint(self) -> str:
        fields = dataclasses.asdict(self)
        fields.pop("build")  # said apart, so a foreign build is named as such
        for optional in ("projector", "rope"):
            if not fields[optional]:
                fields.pop(optional)  # a model without one keeps its snapshots' fingerprint
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Head:
    """A snapshot file's header and token ids, authenticated (its state not yet read)."""

    path: Path
    tag: str  # the conversation (or prompt cache) it was kept for
    fingerprint: str
    build: str
    tokens: tuple[int, ...]
    state_bytes: int
    offset: int  # where the state starts in the file
    head_mac: bytes


def token_digest(tokens: Sequence[int]) -> str:
    return hashlib.sha256(struct.pack(f"<{len(tokens)}i", *tokens)).hexdigest()


def snapshot_path(root: Path, tag: str, stamp: Stamp, tokens: Sequence[int]) -> Path:
    name = f"{stamp.fingerprint()[:16]}-{len(tokens)}-{token_digest(tokens)[:16]}{SUFFIX}"
    return root / tag / name


def _mac(key: bytes, tag: str) -> hmac.HMAC:
    """The MAC of a file kept for `tag`, before any of its bytes."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    mac.update(_DOMAIN + tag.encode() + b"\0")
    return mac


def encode(key: bytes, tag: str, stamp: Stamp, tokens: Sequence[int], state: bytes) -> bytes:
    """A snapshot file's bytes."""
    header = json.dumps(
        {
            "fingerprint": stamp.fingerprint(),
            "build": stamp.build,
            "n_tokens": len(tokens),
            "state_bytes": len(state),
            "written": time.time(),
        }
    ).encode()
    head = MAGIC + _HEAD.pack(b"head", VERSION, len(header)) + header
    head += struct.pack(f"<{len(tokens)}i", *tokens)
    mac = _mac(key, tag)
    mac.update(head)
    head_mac = mac.copy().digest()
    mac.update(head_mac)
    mac.update(state)
    return b"".join((head, head_mac, state, mac.digest()))


def write(
    root: Path, tag: str, stamp: Stamp, tokens: Sequence[int], state: bytes, key: bytes
) -> Path:
    """Write one snapshot (atomically, 0600); its path. `OutputError` on a full disk."""
    path = snapshot_path(root, tag, stamp, tokens)
    try:
        private_folder(path.parent)
    except OSError as exc:
        raise OutputError(f"cannot make {path.parent}: {exc.strerror}") from exc
    write_atomic_bytes(path, encode(key, tag, stamp, tokens, state))
    return path


class _Unusable(Exception):
    """Why a snapshot file is not a whole, authentic snapshot (it is set aside)."""


class _Stale(Exception):
    """Why an authentic snapshot can never be used (it is deleted)."""


def read_head(path: Path, stamp: Stamp, key: bytes, tag: str, limit: int) -> Head | None:
    """The authenticated header and tokens of the snapshot at `path`, kept for `tag`, if it is
    whole, at most `limit` bytes and made for `stamp` (see the guarantees)."""
    try:
        return _head(path, stamp, key, tag, limit)
    except FileNotFoundError:
        return None  # removed meanwhile (a cap, a forget)
    except _Stale as exc:
        log.info("KV snapshot %s not used: %s; it is removed", path.name, exc)
        with contextlib.suppress(OSError):
            path.unlink()
    except (_Unusable, InvalidInputError, OSError, ValueError) as exc:
        why = exc.message if isinstance(exc, InvalidInputError) else str(exc)
        set_aside(path, f"not a usable KV snapshot: {why}", log)
    return None


def _head(path: Path, stamp: Stamp, key: bytes, tag: str, limit: int) -> Head:
    fd, info = open_regular(path, follow=False)
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise _Unusable(f"it holds {info.st_size:,} bytes, more than the cache's cap")
        head = _read_head(f, info.st_size, key, tag, path)
    if head.build != stamp.build:
        raise _Stale(f"it was written by another build of llama.cpp ({head.build})")
    if head.fingerprint != stamp.fingerprint():
        raise _Stale("it was made for another model file, context, cache, RoPE or template")
    return head


def _exactly(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise _Unusable("it is cut short")
    return data


def _read_head(f: BinaryIO, size: int, key: bytes, tag: str, path: Path) -> Head:
    """The head of the file `f` of `size` bytes, every length checked against `size` before
    it is read, and its MAC verified."""
    start = f.read(_START)
    if len(start) < _START or not start.startswith(MAGIC):
        raise _Unusable("it is not a snapshot file")
    mark, version, length = _HEAD.unpack(start[len(MAGIC) :])
    if mark != b"head" or version > VERSION:
        raise _Unusable(f"its format ({version}) is not this app's")
    if version < VERSION:
        raise _Unusable(f"it was written by an older version of the app (format {version})")
    if length > MAX_HEADER or _START + length + 2 * MAC_BYTES > size:
        raise _Unusable(f"its header's length ({length:,}) does not fit its {size:,} bytes")
    raw = _exactly(f, length)
    header = load_json(raw)
    n, state_bytes = _counts(header)
    ids_end = _START + length + 4 * n
    if ids_end + 2 * MAC_BYTES + state_bytes != size:
        said = f"{n:,} tokens and {state_bytes:,} bytes of state"
        raise _Unusable(f"its header says {said}, which its {size:,} bytes do not hold")
    ids = _exactly(f, 4 * n)
    head_mac = _exactly(f, MAC_BYTES)
    mac = _mac(key, tag)
    mac.update(start + raw + ids)
    if not hmac.compare_digest(mac.digest(), head_mac):
        raise _Unusable("its MAC does not verify (forged, another conversation's or install's)")
    tokens = struct.unpack(f"<{n}i", ids)
    fingerprint, build = header.get("fingerprint"), header.get("build")
    if not isinstance(fingerprint, str) or not isinstance(build, str):
        raise _Unusable("its header names no fingerprint or build")
    return Head(path, tag, fingerprint, build, tokens, state_bytes, ids_end + MAC_BYTES, head_mac)


def _counts(header: Any) -> tuple[int, int]:
    """The token count and the state's length a header gives, each an int within bounds."""
    if not isinstance(header, dict):
        raise _Unusable("its header is not an object")
    n, state_bytes = _count(header.get("n_tokens")), _count(header.get("state_bytes"))
    if n > MAX_TOKENS:
        raise _Unusable(f"its header claims {n:,} tokens, more than {MAX_TOKENS:,}")
    return n, state_bytes


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unusable("its header's token count or state length is not a count")
    return value


def read_state(head: Head, key: bytes) -> bytes | None:
    """The state of a snapshot whose head was read, once the file's MAC verifies."""
    try:
        fd, info = open_regular(head.path, follow=False)
        with os.fdopen(fd, "rb") as f:
            if info.st_size != head.offset + head.state_bytes + MAC_BYTES:
                raise _Unusable("it changed since its header was read")
            mac = _mac(key, head.tag)
            front = _exactly(f, head.offset)
            mac.update(front)
            state = _exactly(f, head.state_bytes)
            mac.update(state)
            end = _exactly(f, MAC_BYTES)
    except FileNotFoundError:
        return None
    except (_Unusable, InvalidInputError, OSError) as exc:
        why = exc.message if isinstance(exc, InvalidInputError) else str(exc)
        set_aside(head.path, f"not a usable KV snapshot: {why}", log)
        return None
    if front[-MAC_BYTES:] != head.head_mac or not hmac.compare_digest(mac.digest(), end):
        set_aside(head.path, "not a usable KV snapshot: its state is damaged or forged", log)
        return None
    with contextlib.suppress(OSError):
        os.utime(head.path)  # used now: the last to go under the cap
    return state


def authentic(path: Path, key: bytes, tag: str, limit: int) -> bool:
    """Whether the file at `path` (at most `limit` bytes) is a whole snapshot kept for `tag`
    whose MACs verify under `key`; it is only read (see the guarantees)."""
    try:
        fd, info = open_regular(path, follow=False)
        with os.fdopen(fd, "rb") as f:
            if info.st_size > limit:
                return False
            _read_head(f, info.st_size, key, tag, path)
            return _file_mac_verifies(f, info.st_size, key, tag)
    except (_Unusable, InvalidInputError, OSError, ValueError):
        return False


def _file_mac_verifies(f: BinaryIO, size: int, key: bytes, tag: str) -> bool:
    """Whether the file MAC at the end of `f` (`size` bytes) is that of the rest under `key`,
    read a block at a time."""
    f.seek(0)
    mac, left = _mac(key, tag), size - MAC_BYTES
    while left > 0:
        block = f.read(min(left, 1 << 23))
        if not block:
            return False
        mac.update(block)
        left -= len(block)
    return hmac.compare_digest(mac.digest(), _exactly(f, MAC_BYTES))


def model_digest(path: str, memo: Path | None, key: bytes) -> str:
    """The sha256 of the model file, remembered in `memo` by path, size and modification time;
    the memo is read back bounded and trusted only when its MAC verifies under `key` (a forged
    one could make another model's snapshots look like this one's)."""
    st = os.stat(path)
    entry = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}"
    known = _memo(memo, key) if memo is not None else {}
    if entry in known:
        return known[entry]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 23):
            digest.update(block)
    known[entry] = digest.hexdigest()
    if memo is not None:
        body = {"entries": known, "mac": _memo_mac(key, known)}
        with contextlib.suppress(HarmonyDeskError, OSError):
            write_atomic_bytes(memo, json.dumps(body, indent=1).encode())
    return known[entry]


def _memo(memo: Path, key: bytes) -> dict[str, str]:
    """The memo's entries when its MAC verifies; else none (it is written anew once the model
    is hashed: a memo of another key or an older version is a cache to redo, not kept)."""
    data = read_back(memo, MEMO_LIMIT)  # (one that is not JSON at all is set aside)
    entries = data.get("entries") if isinstance(data, dict) else None
    mac = data.get("mac") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
        return {}
    if not isinstance(mac, str) or not hmac.compare_digest(mac, _memo_mac(key, entries)):
        log.info("the model hashes' memo %s does not verify: the model is hashed again", memo)
        return {}
    return dict(entries)


def _memo_mac(key: bytes, entries: dict[str, str]) -> str:
    text = json.dumps(entries, sort_keys=True).encode()
    return hmac.new(key, _DOMAIN + b"model hashes\0" + text, hashlib.sha256).hexdigest()
