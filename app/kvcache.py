"""The folder of KV snapshots (`kv/` in the cache folder), what owns its files, and the key
that authenticates them.

Layout: one folder per snapshot key (`key_folder`: `mac-` and an id derived from the key, never
the key), so that installs with different keys sharing one cache folder (two data folders, a
test run beside the user's app) never open, set aside, remove or count each other's files. In a
key's folder (`key_root`; the app's own: `own_root`): its model hashes' memo (`models.json`),
one folder per conversation, named by its id (letters, digits, `-` and `_` only), holding that
conversation's snapshot files (`*.kv`; the format: `app/engine/worker/snapshot_file.py`), and
one per tenant's prompt cache (`prompt_tag`: `prompts-local` for the desktop's user — the window,
the terminal, a server without a key — `prompts-<hash of the key>` for a server's key), holding
the states of prompts no conversation owns (a server's clients). Folders right under `kv/` that
are not a key's hold the layout of earlier versions (`legacy_folders`): the worker moves into
its key's folder only the files its key's MACs prove its own, and leaves the others alone
(`app/engine/worker/snapshot_adopt.py`).
Guarantees (each `root` below is one key's folder):
`forget(root, tag)` removes a conversation's snapshots (the history calls it when the
conversation is deleted or purged), `sweep` removes those of conversations the history no
longer holds (never a prompt cache), `enforce_cap` removes the least recently used files (by
modification time: a restore touches its file) until the folder holds at most its cap — files
set aside as unusable (`NAME.kv.unusable-…`) count in it and go first — and what a write cut
short left behind, `listing` says what is there, `clear` removes everything. `files` never
lists what is inside a folder that is a symbolic link. Nothing here reads a snapshot's contents.
A tag is never shaped like a key folder's name (`valid_tag`), so neither a write nor a `forget`
or `sweep` handed the shared `kv/` by mistake ever reaches a key's folder.
`snapshot_key()` is this install's key for the snapshots' MACs (32 random bytes): kept in the
keyring (`kv.snapshot-key`), made the first time; where the keyring cannot keep one (no Secret
Service), in `kv-snapshot.key` (0600, made whole or not at all) in the config folder, said once
in the log; None when neither can keep it, and the snapshots then stay in RAM. It is read in the
app's process only: the worker is handed it with the load (`SnapshotSettings.key`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import InvalidInputError
from app.fileio import private_folder
from app.inputs import read_text_file
from app.paths import cache_dir, config_dir
from app.readback import ASIDE, set_aside

if TYPE_CHECKING:
    from app.secrets import Secrets

log = logging.getLogger("engine")

SUFFIX = ".kv"
STALE_S = 600.0  # a temporary file this old was left by a write that never ended
_TAG = re.compile(r"[A-Za-z0-9_-]{1,128}")
PROMPTS = "prompts-"
KEY_NAME = "kv.snapshot-key"  # in the keyring
KEY_FILE = "kv-snapshot.key"  # in the config folder, where the keyring cannot keep the key
KEY_BYTES = 32
_KEYED = re.compile(r"mac-[0-9a-f]{24}")  # a key's folder
_FOLDER_ID = b"harmony-desk KV snapshot folder\0"
_said: set[str] = set()


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
    return bool(_TAG.fullmatch(tag)) and not is_key_folder(tag)


def key_folder(key: bytes) -> str:
    """The name of `key`'s folder: a MAC of a fixed text under the key (it tells nothing of the
    key, and only the key's holder can make it)."""
    return "mac-" + hmac.new(key, _FOLDER_ID, hashlib.sha256).hexdigest()[:24]


def is_key_folder(name: str) -> bool:
    return bool(_KEYED.fullmatch(name))


def key_root(base: Path, key: bytes) -> Path:
    """The folder of `key`'s snapshots in `base` (the cache's `kv/`)."""
    return base / key_folder(key)


def own_root(base: Path | None = None) -> Path | None:
    """This install's folder of snapshots (in `base`, else the cache's `kv/`); None when it
    has no key (then nothing is kept on disk). Reads the key (`snapshot_key`)."""
    key = snapshot_key()
    return key_root(base or kv_root(), key) if key else None


def key_folders(base: Path) -> list[Path]:
    """The keys' folders in `base` (the cache's `kv/`), none that is a link."""
    return [p for p in _folders(base) if is_key_folder(p.name)]


def legacy_folders(base: Path) -> list[Path]:
    """The conversations' and prompt caches' folders of the layout before keys had folders
    (right in `base`), none that is a link."""
    return [p for p in _folders(base) if valid_tag(p.name)]


def files(root: Path, tag: str | None = None) -> list[Path]:
    """Every snapshot file under `root` (of one tag when given)."""
    return [p for folder in _folders(root, tag) for p in _listdir(folder) if p.suffix == SUFFIX]


def aside(root: Path) -> list[Path]:
    """The snapshot files set aside as unusable (never read again; kept until the cap)."""
    return [p for folder in _folders(root) for p in _listdir(folder) if SUFFIX + ASIDE in p.name]


def _folders(root: Path, tag: str | None = None) -> list[Path]:
    """The tag folders under `root` (one when `tag` is given), none that is a link."""
    found = [root / tag] if tag is not None else _listdir(root)
    return [p for p in found if p.is_dir() and not p.is_symlink()]


def _listdir(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def forget(root: Path | None, tag: str) -> None:
    """Remove the snapshots of conversation `tag` (None: no folder, nothing kept on disk)."""
    if root is not None and valid_tag(tag):
        shutil.rmtree(root / tag, ignore_errors=True)


def enforce_cap(root: Path, cap_bytes: int) -> list[Path]:
    """Remove the least recently used snapshots until the folder holds at most `cap_bytes`;
    the files removed. A write cut short (a worker killed while writing leaves its temporary
    `.NAME.kv.*` file) goes once it is `STALE_S` old."""
    _drop_stale(root)
    found = []
    for p in files(root) + aside(root):
        with contextlib.suppress(OSError):
            st = p.lstat()
            first = ASIDE in p.name  # never used again: they go first
            found.append((not first, st.st_mtime, st.st_size, p))
    total = sum(size for _, _, size, _ in found)
    removed = []
    for _, _, size, path in sorted(found):
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
    for folder in _folders(root):
        for p in _listdir(folder):
            if p.name.startswith(".") and SUFFIX in p.name:
                with contextlib.suppress(OSError):
                    if now - p.lstat().st_mtime > STALE_S:
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
    for folder in {p.parent for p in files(root) + aside(root)}:
        shutil.rmtree(folder, ignore_errors=True)
    return freed


def sweep(root: Path | None, keep: set[str]) -> None:
    """Remove the snapshots of conversations not in `keep` (deleted while the app was away;
    None: no folder)."""
    for folder in _listdir(root) if root is not None else []:
        if folder.is_dir() and folder.name not in keep and not is_prompt_tag(folder.name):
            forget(root, folder.name)


def snapshot_key(secrets: Secrets | None = None) -> bytes | None:
    """This install's key for the snapshots' MACs (see the guarantees); `secrets`: the keyring
    (`app.secrets.Secrets`, made here when not given)."""
    from app.secrets import Secrets

    keyring = secrets if secrets is not None else Secrets()
    key = keyring.install_key(KEY_NAME, KEY_BYTES)
    if key is not None:
        return key
    path = config_dir() / KEY_FILE
    key = _key_file(path)
    _say_once(
        f"the keyring cannot keep the KV snapshots' key ({keyring.problem}); it is kept in {path}"
        " (0600) instead"
        if key is not None
        else "no key to authenticate KV snapshots could be kept: they stay in RAM"
    )
    return key


def _say_once(sentence: str) -> None:
    """Said once a process, at INFO: a machine with no keyring (a server, CI) is expected, and
    a load is not alarming for it (the snapshots stay authenticated either way)."""
    if sentence not in _said:
        _said.add(sentence)
        log.info("%s", sentence)


def _key_file(path: Path) -> bytes | None:
    """The key kept in `path`, made (whole, or not at all) when there is none or it is not one."""
    for _ in range(2):
        if os.path.lexists(path):
            try:
                key = bytes.fromhex(read_text_file(path, 4 * KEY_BYTES, follow=False).strip())
            except (InvalidInputError, ValueError) as exc:
                key, why = b"", getattr(exc, "message", "it is not hexadecimal")
            else:
                why = f"it holds {len(key)} bytes, not {KEY_BYTES}"
            if len(key) == KEY_BYTES:
                return key
            set_aside(path, why, log)
        try:
            _make_key_file(path)
        except FileExistsError:
            continue  # made meanwhile by another process: read it
        except OSError as exc:
            log.warning("the KV snapshots' key could not be kept in %s: %s", path, exc.strerror)
            return None
    return None


def _make_key_file(path: Path) -> None:
    """A new key in `path`, written whole to a temporary file and linked there only if none is."""
    private_folder(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(os.urandom(KEY_BYTES).hex())
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)  # FileExistsError when another process made one first
    finally:
        Path(tmp).unlink(missing_ok=True)
