"""The documents index: one SQLite file in the data folder, searched by words and by meaning.

Guarantees: adding a file extracts, chunks and embeds it and stores it in one transaction (a
file whose content is unchanged is not read again; a changed one replaces its chunks); every
chunk is in an FTS5 table (BM25, Unicode words, accents folded) and has a stored embedding;
`search` ranks the BM25 and the embedding neighbours separately and fuses them by reciprocal
rank (k = 60), best first, each hit naming its file, page or lines, text and score; the query
is only ever words to FTS5 (its syntax cannot be injected); a file that could not be read is
kept with its notice and no chunks; `remove` forgets a file and its chunks. A folder added
is remembered: `refresh` indexes the files that appeared in it since, reads again the files
that changed (size or modification time differ, then the content is compared) and forgets
those that are gone — cheap when nothing changed (one `stat` per file), so it runs before each
use of the library. No file stops the others: whatever one holds (a decompression bomb, a
damaged or unreadable file) is that file's notice, kept, and the folder's other files are
indexed. A folder's walk (`walk`) indexes only the files whose real path lies inside it: a
link leading out (to `/etc/passwd`, or a linked folder elsewhere) is never read, never indexed,
and is said — an `Added` of kind `SKIPPED` with its notice from `add_folder`, a log line from
`refresh` — so nothing outside the folder the user added can reach a prompt. The index file is
0600 in a 0700 folder, whatever the umask.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.documents import embed
from app.documents.chunk import chunks
from app.documents.extract import SUFFIXES, Extracted, extract
from app.fileio import connect_private
from app.paths import data_dir

log = logging.getLogger("store")

RRF_K = 60
SKIPPED = "skipped"  # the kind of an `Added` for a link leading out of a folder: not indexed
POOL = 50  # candidates taken from each ranking before fusing
SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, sha256 TEXT NOT NULL, kind TEXT NOT NULL,
    notice TEXT, added REAL NOT NULL, embedder TEXT NOT NULL, stamp TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, document INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL, page INTEGER, first_line INTEGER NOT NULL, last_line INTEGER NOT NULL,
    text TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_of ON chunks(document);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_in AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_out AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
"""


@dataclass(frozen=True)
class Hit:
    file: str
    page: int | None
    lines: tuple[int, int]
    text: str
    score: float

    def where(self) -> str:
        """ "page 3" or "lines 10–24"."""
        if self.page is not None:
            return f"page {self.page}"
        return f"lines {self.lines[0]}–{self.lines[1]}"


@dataclass(frozen=True)
class Added:
    path: str
    kind: str
    chunks: int
    notice: str | None
    unchanged: bool = False


def _stamp(path: Path) -> str:
    """The file's size and modification time: when they are unchanged, so is the file."""
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def files_in(paths: list[Path]) -> list[Path]:
    """The files named, and the readable files inside the folders named (sorted; `walk`)."""
    out: list[Path] = []
    for path in paths:
        out += walk(path).files if path.is_dir() else [path]
    return out


@dataclass(frozen=True)
class Walked:
    """What a folder holds for the library: its files, and the links leading out of it, each
    with the sentence that says why it was skipped."""

    files: list[Path]
    skipped: list[tuple[Path, str]]


def walk(folder: Path) -> Walked:
    """The files of a kind the library reads under `folder` whose real path lies inside it
    (sorted), and those that lie outside (a link to `/etc/passwd`) with the links to folders
    leading out (never followed), skipped and said (see the module guarantees)."""
    root = folder.resolve()
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for here, dirs, names in os.walk(folder, followlinks=False):
        for name in dirs:
            path = Path(here) / name
            if path.is_symlink() and _outside(path, root):
                said = f"a link to the folder {path.resolve()}, outside {folder}: not looked in"
                skipped.append((path, said))
        for name in names:
            path = Path(here) / name
            if path.suffix.lower() not in SUFFIXES:
                continue
            if _outside(path, root):
                said = f"a link to {path.resolve()}, outside {folder}: not indexed"
                skipped.append((path, said))
            elif path.is_file():
                files.append(path)
    return Walked(sorted(files), sorted(skipped))


def _outside(path: Path, root: Path) -> bool:
    """Whether `path`, links followed, lies outside the folder `root` (resolved)."""
    real = Path(os.path.realpath(path))
    return real != root and root not in real.parents


class DocumentIndex:
    """See the module guarantees."""

    def __init__(self, path: Path | None = None, *, memory: bool = False) -> None:
        """The index in `path` (the data folder's by default), or in memory only."""
        self.path = path or data_dir() / "documents.sqlite3"
        self.db = sqlite3.connect(":memory:") if memory else connect_private(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        columns = {r[1] for r in self.db.execute("PRAGMA table_info(documents)")}
        if "stamp" not in columns:  # an index written before stamps: every file compared once
            self.db.execute("ALTER TABLE documents ADD COLUMN stamp TEXT NOT NULL DEFAULT ''")
        self._vectors: tuple[np.ndarray, np.ndarray] | None = None  # (chunk ids, matrix)

    def close(self) -> None:
        self.db.close()

    def add_folder(self, folder: Path) -> list[Added]:
        """Index the files inside `folder` and remember it, so `refresh` finds new files; the
        links leading out of it are skipped, each an `Added` of kind `SKIPPED` whose notice
        says so (nothing of them is read)."""
        folder = folder.resolve()
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO folders VALUES (?)", (str(folder),))
        walked = walk(folder)
        skipped = [Added(str(p), SKIPPED, 0, said) for p, said in walked.skipped]
        return [self.add(p) for p in walked.files] + skipped

    def folders(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM folders ORDER BY path")]

    def add(self, path: Path) -> Added:
        """Index `path` (see the module guarantees)."""
        path = path.resolve()
        stamp = _stamp(path) if path.is_file() else ""
        row = self.db.execute(
            "SELECT sha256, kind, notice, embedder, (SELECT count(*) FROM chunks WHERE"
            " document = documents.id), stamp FROM documents WHERE path = ?",
            (str(path),),
        ).fetchone()
        if row is not None and row[3] == embed.NAME and stamp and row[5] == stamp:
            return Added(str(path), row[1], row[4], row[2], unchanged=True)
        digest = hashlib.sha256().hexdigest()
        if path.is_file():
            try:
                with path.open("rb") as f:  # streamed: any size is hashed in small reads
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError as exc:  # unreadable (permissions, gone meanwhile): said, kept
                said = f"the file could not be read ({exc.strerror})"
                return self.add_extracted(path, Extracted(str(path), "text", notice=said))
        if row is not None and row[0] == digest and row[3] == embed.NAME:
            with self.db:  # touched, not changed: the new stamp saves the next comparison
                self.db.execute("UPDATE documents SET stamp = ? WHERE path = ?", (stamp, str(path)))
            return Added(str(path), row[1], row[4], row[2], unchanged=True)
        return self.add_extracted(path, extract(path), digest, stamp)

    def add_extracted(
        self, path: Path, extracted: Extracted, digest: str = "", stamp: str = ""
    ) -> Added:
        """Index what was already extracted from `path`."""
        pieces = chunks(extracted)
        vectors = embed.embed([c.text for c in pieces])
        with self.db:
            self.db.execute("DELETE FROM documents WHERE path = ?", (str(path),))
            cursor = self.db.execute(
                "INSERT INTO documents(path, sha256, kind, notice, added, embedder, stamp)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    str(path),
                    digest,
                    extracted.kind,
                    extracted.notice,
                    time.time(),
                    embed.NAME,
                    stamp,
                ),
            )
            document = cursor.lastrowid
            self.db.executemany(
                "INSERT INTO chunks(document, ord, page, first_line, last_line, text, vector)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (document, i, c.page, c.first_line, c.last_line, c.text, vectors[i].tobytes())
                    for i, c in enumerate(pieces)
                ],
            )
        self._vectors = None
        return Added(str(path), extracted.kind, len(pieces), extracted.notice)

    def refresh(self) -> tuple[list[Added], list[str]]:
        """Every indexed file checked again and the remembered folders looked through:
        (those new, read again or unchanged; those gone)."""
        paths = {Path(r[0]) for r in self.db.execute("SELECT path FROM documents")}
        gone = sorted(str(p) for p in paths if not p.is_file())
        for path in gone:
            self.remove(Path(path))
        found: list[Path] = []
        for folder in (Path(f) for f in self.folders() if Path(f).is_dir()):
            walked = walk(folder)
            found += walked.files
            for link, said in walked.skipped:
                log.info("the library skips %s: %s", link, said)
        paths = {p for p in paths if p.is_file()} | {p.resolve() for p in found}
        return [self.add(p) for p in sorted(paths)], gone

    def remove(self, path: Path) -> bool:
        """Forget a file, or a folder and every file under it."""
        where = str(path.resolve())
        with self.db:
            folder = self.db.execute("DELETE FROM folders WHERE path = ?", (where,)).rowcount
            gone = self.db.execute(
                "DELETE FROM documents WHERE path = ? OR substr(path, 1, ?) = ?",
                (where, len(where) + 1, where.rstrip("/") + "/"),
            ).rowcount
        self._vectors = None
        return gone + folder > 0

    def documents(self) -> list[dict[str, object]]:
        rows = self.db.execute(
            "SELECT path, kind, notice, (SELECT count(*) FROM chunks WHERE document = d.id)"
            " FROM documents d ORDER BY path"
        ).fetchall()
        return [{"path": p, "kind": k, "chunks": n, "notice": notice} for p, k, notice, n in rows]

    def _words(self, query: str, k: int) -> list[int]:
        words = re.findall(r"\w+", query)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)  # words only: FTS5 syntax cannot get in
        rows = self.db.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts)"
            " LIMIT ?",
            (match, k),
        ).fetchall()
        return [r[0] for r in rows]

    def _meaning(self, query: str, k: int) -> list[int]:
        if self._vectors is None:
            rows = self.db.execute("SELECT id, vector FROM chunks").fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            matrix = (
                np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, embed.DIM)
                if rows
                else np.zeros((0, embed.DIM), dtype=np.float32)
            )
            self._vectors = (ids, matrix)
        ids, matrix = self._vectors
        if not len(ids):
            return []
        scores = matrix @ embed.embed([query])[0]
        top = np.argsort(-scores)[:k]
        return [int(ids[i]) for i in top if scores[i] > 0]

    def search(self, query: str, k: int = 5, *, hybrid: bool = True) -> list[Hit]:
        """The `k` best chunks for `query`, best first (BM25 alone when not `hybrid`)."""
        fused: dict[int, float] = {}
        rankings = [self._words(query, POOL)] + ([self._meaning(query, POOL)] if hybrid else [])
        for ranking in rankings:
            for rank, chunk in enumerate(ranking):
                fused[chunk] = fused.get(chunk, 0.0) + 1.0 / (RRF_K + rank + 1)
        best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
        hits = []
        for chunk, score in best:
            row = self.db.execute(
                "SELECT d.path, c.page, c.first_line, c.last_line, c.text FROM chunks c"
                " JOIN documents d ON d.id = c.document WHERE c.id = ?",
                (chunk,),
            ).fetchone()
            hits.append(Hit(row[0], row[1], (row[2], row[3]), row[4], round(score, 6)))
        return hits


__all__ = ["SKIPPED", "Added", "DocumentIndex", "Hit", "Walked", "files_in", "walk"]
