"""Which tool plugins the user trusts: by name, place and the hash of their files.

Guarantees: a plugin is trusted only when the user said so for exactly this name, this path
and this content hash; a new plugin, or one whose files changed since, is *pending* and is
never imported; the trust file (`plugin-trust.json` in the config folder) is written
atomically with mode 0600, and an unreadable one trusts nothing (read back bounded, never
blocking; one that is not a file the app wrote is set aside: `app/readback.py`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from app.fileio import write_atomic
from app.paths import config_dir
from app.readback import read_back

Kind = Literal["entry point", "folder", "file"]
TRUST_LIMIT = 16 << 20  # bytes
_HASHED_SUFFIXES = {".py", ".toml", ".txt", ".json", ".cfg", ".pth", ".so", ".pyd", ".dylib"}


@dataclass(frozen=True)
class PluginIdentity:
    """A plugin as the user is asked about it."""

    name: str
    kind: Kind
    path: str
    sha256: str


def hash_tree(path: Path) -> str:
    """sha256 over a file, or over every code and metadata file under a folder (sorted)."""
    digest = hashlib.sha256()
    files = (
        [path]
        if path.is_file()
        else sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and p.suffix in _HASHED_SUFFIXES and "__pycache__" not in p.parts
        )
    )
    for file in files:
        digest.update(str(file.relative_to(path.parent if path.is_file() else path)).encode())
        digest.update(b"\0")
        try:
            digest.update(file.read_bytes())
        except OSError as exc:
            digest.update(f"unreadable: {exc}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


class TrustStore:
    """The user's answers about plugins (see the module guarantees)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "plugin-trust.json"

    def load(self) -> dict[str, PluginIdentity]:
        raw = read_back(self.path, TRUST_LIMIT)
        if not isinstance(raw, dict):
            return {}  # none, or set aside: nothing is trusted
        try:
            return {name: PluginIdentity(**entry) for name, entry in raw.items()}
        except TypeError:  # not the shape written here: nothing is trusted
            return {}

    def is_trusted(self, identity: PluginIdentity) -> bool:
        return self.load().get(identity.name) == identity

    def status(self, identity: PluginIdentity) -> str:
        """ "trusted", "changed" (trusted once, its files differ now) or "new"."""
        known = self.load().get(identity.name)
        if known == identity:
            return "trusted"
        return "changed" if known is not None else "new"

    def trust(self, identity: PluginIdentity) -> None:
        entries = self.load()
        entries[identity.name] = identity
        self._save(entries)

    def revoke(self, name: str) -> bool:
        entries = self.load()
        gone = entries.pop(name, None) is not None
        self._save(entries)
        return gone

    def _save(self, entries: dict[str, PluginIdentity]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {n: asdict(i) for n, i in sorted(entries.items())}
        write_atomic(self.path, json.dumps(data, indent=1))  # a new file is 0600 (mkstemp)


__all__ = ["PluginIdentity", "TrustStore", "hash_tree"]
