"""The files attached to messages, kept with the conversations: one copy per distinct content.

Guarantees: a kept file is stored once under its sha256 in the data folder's `attachments`
folder (written whole or not at all), whatever its name and however many messages carry it;
each message's files are recorded by conversation and message version, with the name they
had; `collect` forgets the records of conversations that no longer exist and removes every
stored file no remaining record uses — never one still used. The folder is 0700 and every
file in it (the stored copies, `kept.sqlite3` and its companions) 0600, whatever the umask.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from app.fileio import connect_private, private_folder, write_atomic_bytes
from app.paths import data_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS kept (
    sha256 TEXT NOT NULL, name TEXT NOT NULL, conversation TEXT NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (sha256, conversation, version, name)
);
CREATE INDEX IF NOT EXISTS kept_by_version ON kept(version);
"""


class KeptFiles:
    """See the module guarantees."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or data_dir() / "attachments"
        private_folder(self.folder)
        self.db = connect_private(self.folder / "kept.sqlite3")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def keep(self, path: Path, conversation: str, version: str) -> str:
        """Store `path` (once per content) for the message; its sha256."""
        with path.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        if self.stored(digest) is None:
            write_atomic_bytes(self.folder / digest, path.read_bytes())
        self.record(digest, path.name, conversation, version)
        return digest

    def keep_bytes(self, data: bytes, name: str, conversation: str, version: str) -> str:
        """Store `data` (a file's content, named `name`) for the message; its sha256."""
        digest = hashlib.sha256(data).hexdigest()
        if self.stored(digest) is None:
            write_atomic_bytes(self.folder / digest, data)
        self.record(digest, name, conversation, version)
        return digest

    def stored(self, digest: str) -> Path | None:
        """The stored file of that content, if there is one."""
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            return None
        path = self.folder / digest
        return path if path.is_file() else None

    def record(self, digest: str, name: str, conversation: str, version: str) -> None:
        """Record that the message carried the stored file `digest` as `name`."""
        with self.db:
            self.db.execute(
                "INSERT OR IGNORE INTO kept VALUES (?, ?, ?, ?)",
                (digest, name, conversation, version),
            )

    def files_of(self, version: str) -> list[tuple[str, Path]]:
        """(name, stored file) of each file the message version carried."""
        rows = self.db.execute(
            "SELECT name, sha256 FROM kept WHERE version = ? ORDER BY rowid", (version,)
        ).fetchall()
        return [(name, self.folder / digest) for name, digest in rows]

    def collect(self, alive: Iterable[str]) -> int:
        """Forget the conversations not in `alive`, then the files no one uses; how many
        files were removed."""
        alive = set(alive)
        with self.db:
            known = {r[0] for r in self.db.execute("SELECT DISTINCT conversation FROM kept")}
            for gone in known - alive:
                self.db.execute("DELETE FROM kept WHERE conversation = ?", (gone,))
        used = {r[0] for r in self.db.execute("SELECT DISTINCT sha256 FROM kept")}
        removed = 0
        for stored in self.folder.iterdir():
            if len(stored.name) == 64 and stored.name not in used:
                stored.unlink(missing_ok=True)
                removed += 1
        return removed


def keep_files(files: Iterable[Path], conversation: str, version: str) -> None:
    """The files a message carried, kept with its conversation (those still there)."""
    kept = KeptFiles()
    try:
        for path in files:
            if path.is_file():
                kept.keep(path, conversation, version)
    finally:
        kept.close()


def collect_kept(alive: Iterable[str], folder: Path | None = None) -> int:
    """The kept files no conversation in `alive` uses, removed (see `KeptFiles.collect`)."""
    kept = KeptFiles(folder)
    try:
        return kept.collect(alive)
    finally:
        kept.close()


__all__ = ["KeptFiles", "collect_kept", "keep_files"]
