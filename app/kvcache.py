"""The folder of KV snapshots (`kv/` in the cache folder) and what owns its files.

One folder per conversation, named by its id (letters, digits, `-` and `_` only), holding that
conversation's snapshot files (`*.kv`; the format: `app/engine/worker/snapshot_file.py`), and
one per tenant's prompt cache (`prompt_tag`: `prompts-local` for the desktop's user — the window,
the terminal, a server without a key — `prompts-<hash of the key>` for a server's key), holding
the states of prompts no conversation owns (a server's clients).
Guarantees:
`forget(root, tag)` removes a conversation's snapshots (the history calls it when the
conversation is deleted or purged), `sweep` removes those of conversations the history no
longer holds (never a prompt cache), `enforce_cap` removes the least recently used files (by
modification time: a restore touches its file) until the folder holds at most its cap, and what
a write cut short left behind, `listing` says what is there, `clear` removes everything.
Nothing here reads a snapshot's contents.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from app.paths import cache_dir

SUFFIX = ".kv"
STALE_S = 600.0  # a temporary file this old was left by a write that never ended
_TAG = re.compile(r"[A-Za-z0-9_-]{1,128}")
PROMPTS = "prompts-"


def prompt_tag(tenant: str) -> str:
    """The folder of `tenant`'s prompt cache ("": the desktop's user)."""
    return PROMPTS + (tenant or "local")


def is_prompt_tag(tag: str) -> bool:
    return tag.startswith(PROMPTS)


def tenant_of_key(key: str | None) -> str:
    """The tenant of a server's API key (None: no key, the desktop's user): a hash, never
    the key."""
    return "" if not key else "key-" + hashlib.sha256(key.encode()).hexdigest()[:24]


def kv_root() -> Path:
    """The folder of KV snapshots: `kv/` in the cache folder."""
    return cache_dir() / "kv"


def valid_tag(tag: str) -> bool:
    return bool(_TAG.fullmatch(tag))


def files(root: Path, tag: str | None = None) -> list[Path]:
    """Every snapshot file under `root` (of one tag when given)."""
    folders = [root / tag] if tag is not None else [p for p in _listdir(root) if p.is_dir()]
    return [p for folder in folders for p in _listdir(folder) if p.suffix == SUFFIX]


def _listdir(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def forget(root: Path, tag: str) -> None:
    """Remove the snapshots of conversation `tag`."""
    if valid_tag(tag):
        shutil.rmtree(root / tag, ignore_errors=True)


def enforce_cap(root: Path, cap_bytes: int) -> list[Path]:
    """Remove the least recently used snapshots until the folder holds at most `cap_bytes`;
    the files removed. A write cut short (a worker killed while writing leaves its temporary
    `.NAME.kv.*` file) goes once it is `STALE_S` old."""
    _drop_stale(root)
    found = []
    for p in files(root):
        with contextlib.suppress(OSError):
            st = p.stat()
            found.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in found)
    removed = []
    for _, size, path in sorted(found):
        if total <= cap_bytes:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
            total -= size
    for folder in {p.parent for p in removed}:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty
    return removed


def _drop_stale(root: Path) -> None:
    now = time.time()
    for folder in (p for p in _listdir(root) if p.is_dir()):
        for p in _listdir(folder):
            if p.name.startswith(".") and SUFFIX in p.name:
                with contextlib.suppress(OSError):
                    if now - p.stat().st_mtime > STALE_S:
                        p.unlink()


@dataclass(frozen=True)
class Listed:
    tag: str
    name: str
    n_tokens: int
    size: int
    used: float


def held(path: Path) -> int | None:
    """How many tokens a snapshot file holds, from its name (`FINGERPRINT-COUNT-DIGEST.kv`);
    None for a name that is not a snapshot's."""
    parts = path.name.split("-")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def listing(root: Path) -> list[Listed]:
    """What the folder holds, the most recently used first."""
    out = []
    for p in files(root):
        with contextlib.suppress(OSError, ValueError):
            st = p.stat()
            out.append(Listed(p.parent.name, p.name, held(p) or 0, st.st_size, st.st_mtime))
    return sorted(out, key=lambda s: -s.used)


def clear(root: Path) -> int:
    """Remove every snapshot; how many bytes were freed."""
    freed = sum(s.size for s in listing(root))
    for folder in {p.parent for p in files(root)}:
        shutil.rmtree(folder, ignore_errors=True)
    return freed


def sweep(root: Path, keep: set[str]) -> None:
    """Remove the snapshots of conversations not in `keep` (deleted while the app was away)."""
    for folder in _listdir(root):
        if folder.is_dir() and folder.name not in keep and not is_prompt_tag(folder.name):
            forget(root, folder.name)
