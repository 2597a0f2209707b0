"""KV snapshots on disk: the file format (pure: no llama.cpp).

A snapshot is one conversation's KV state as llama.cpp's per-sequence state API wrote it, with
the token ids it holds, so that reopening the conversation restores it instead of evaluating
the prompt again (the worker's side: `app/engine/worker/kv_snapshots.py`).

Guarantees:
- A file is `MAGIC`, a JSON header (its `Stamp`: what makes the state valid — the model file's
  content hash, context length, cache type, flash attention, window cache, template — as one
  fingerprint; llama.cpp's build; the token count; the sha256 of the tokens and of the state),
  the token ids (int32, little-endian), then the state. `read_head` gives the header and the
  ids, `read_state` the state; each is None, with the reason logged, unless every part checks:
  a damaged, cut-short or foreign file (another build, another fingerprint) is never handed on,
  and it is deleted.
- A file is written atomically, 0600 in 0700 folders, in its conversation's folder
  (`app/kvcache.py`: the folder, its cap and what deletes a conversation's snapshots), and used
  again only by its own conversation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.fileio import OutputError, private_folder, write_atomic_bytes
from app.kvcache import SUFFIX

log = logging.getLogger("engine")

MAGIC = b"HDKVSNAP"
VERSION = 1
_HEAD = struct.Struct("<4sII")  # b"head", format version, header length
MAX_HEADER = 1 << 16


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

    def fingerprint(self) -> str:
        fields = dataclasses.asdict(self)
        fields.pop("build")  # said apart, so a foreign build is named as such
        if not fields["projector"]:
            fields.pop("projector")  # a text-only model's snapshots keep their fingerprint
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Head:
    """A snapshot file's header and token ids (its state not yet read)."""

    path: Path
    fingerprint: str
    build: str
    tokens: tuple[int, ...]
    state_sha256: str
    state_bytes: int
    offset: int  # where the state starts in the file


def token_digest(tokens: Sequence[int]) -> str:
    return hashlib.sha256(struct.pack(f"<{len(tokens)}i", *tokens)).hexdigest()


def snapshot_path(root: Path, tag: str, stamp: Stamp, tokens: Sequence[int]) -> Path:
    name = f"{stamp.fingerprint()[:16]}-{len(tokens)}-{token_digest(tokens)[:16]}{SUFFIX}"
    return root / tag / name


def encode(stamp: Stamp, tokens: Sequence[int], state: bytes) -> bytes:
    """A snapshot file's bytes."""
    header = json.dumps(
        {
            "fingerprint": stamp.fingerprint(),
            "build": stamp.build,
            "n_tokens": len(tokens),
            "tokens_sha256": token_digest(tokens),
            "state_sha256": hashlib.sha256(state).hexdigest(),
            "state_bytes": len(state),
            "written": time.time(),
        }
    ).encode()
    ids = struct.pack(f"<{len(tokens)}i", *tokens)
    return b"".join((MAGIC, _HEAD.pack(b"head", VERSION, len(header)), header, ids, state))


def write(root: Path, tag: str, stamp: Stamp, tokens: Sequence[int], state: bytes) -> Path:
    """Write one snapshot (atomically, 0600); its path. `OutputError` on a full disk."""
    path = snapshot_path(root, tag, stamp, tokens)
    try:
        private_folder(path.parent)
    except OSError as exc:
        raise OutputError(f"cannot make {path.parent}: {exc.strerror}") from exc
    write_atomic_bytes(path, encode(stamp, tokens, state))
    return path


class _Unusable(Exception):
    """Why a snapshot file cannot be used."""


def _discard(path: Path, why: str) -> None:
    log.info("KV snapshot %s not used: %s; it is removed", path.name, why)
    with contextlib.suppress(OSError):
        path.unlink()


def read_head(path: Path, stamp: Stamp) -> Head | None:
    """The header and tokens of the snapshot at `path` if it is whole and made for `stamp`."""
    try:
        return _head(path, stamp)
    except FileNotFoundError:
        return None  # removed meanwhile (a cap, a forget)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _discard(path, f"its header cannot be read ({exc})")
    except _Unusable as exc:
        _discard(path, str(exc))
    return None


def _head(path: Path, stamp: Stamp) -> Head:
    with open(path, "rb") as f:
        start = f.read(len(MAGIC) + _HEAD.size)
        if len(start) < len(MAGIC) + _HEAD.size or not start.startswith(MAGIC):
            raise _Unusable("it is not a snapshot file")
        mark, version, size = _HEAD.unpack(start[len(MAGIC) :])
        if mark != b"head" or version != VERSION or size > MAX_HEADER:
            raise _Unusable(f"its format (version {version}) is not this app's")
        header = json.loads(f.read(size))
        n = int(header["n_tokens"])
        raw = f.read(4 * n)
        total = os.fstat(f.fileno()).st_size
    if header["build"] != stamp.build:
        raise _Unusable(f"it was written by another build of llama.cpp ({header['build']})")
    if header["fingerprint"] != stamp.fingerprint():
        raise _Unusable("it was made for another model file, context, cache or template")
    if len(raw) != 4 * n:
        raise _Unusable("it is cut short")
    tokens = struct.unpack(f"<{n}i", raw)
    offset = len(MAGIC) + _HEAD.size + size + 4 * n
    if token_digest(tokens) != header["tokens_sha256"]:
        raise _Unusable("its tokens are damaged")
    if total != offset + int(header["state_bytes"]):
        raise _Unusable(f"it holds {total} bytes, not {offset + int(header['state_bytes'])}")
    return Head(
        path,
        header["fingerprint"],
        header["build"],
        tokens,
        str(header["state_sha256"]),
        int(header["state_bytes"]),
        offset,
    )


def read_state(head: Head) -> bytes | None:
    """The state of a snapshot whose head was read, if it is whole and undamaged."""
    try:
        with open(head.path, "rb") as f:
            f.seek(head.offset)
            state = f.read(head.state_bytes + 1)
    except OSError as exc:
        _discard(head.path, f"it cannot be read ({exc.strerror})")
        return None
    if len(state) != head.state_bytes or hashlib.sha256(state).hexdigest() != head.state_sha256:
        _discard(head.path, "its state is damaged or cut short")
        return None
    with contextlib.suppress(OSError):
        os.utime(head.path)  # used now: the last to go under the cap
    return state
