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
`refresh` — so nothing outside the folder the user added can reach a prompt. Each file
remembers how it was reached (`source`: the path found, a link's own path; `via`: the folder
whose walk found it, "" for a file named on its own), so a file indexed through a link leading
out of its folder — by a version that followed links, or through a folder that became a link
since — is removed (with its chunks) by the next `add_folder` of that folder and by every
`refresh`, each an `Added` of kind `SKIPPED` and `removed` whose notice says so, and `search`
never returns a passage of a file whose path no longer resolves inside the folder it was found
in (one `realpath` per document hit), even before that scan. An index written before origins
were recorded learns them once, when first opened (its folders walked once). The index file is
0600 in a 0700 folder, whatever the umask.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.documents import embed
from app.documents.chunk import chunks
from app.documents.contained import (
    Walked,
    files_in,
    inside,
    origins,
    removed_notice,
    walk,
)
from app.documents.extract import Extracted, extract
from app.fileio import connect_private
from app.paths import data_dir

log = logging.getLogger("store")

RRF_K = 60
SKIPPED = "skipped"  # the kind of an `Added` for a link leading out of a folder: not indexed
POOL = 50  # candidates taken from each ranking before fusing
SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, sha256 TEXT NOT NULL, kind TEXT NOT NULL,
    notice TEXT, added REAL NOT NULL, embedder TEXT NOT NULL, stamp TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '', via TEXT NOT NULL DEFAULT ''
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
    removed: bool = False  # a `SKIPPED` link that had been indexed, now removed from the index


def _stamp(path: Path) -> str:
    """The file's size and modification time: when they are unchanged, so is the file."""
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


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
        if "via" not in columns:
            self._record_origins()
        self._vectors: tuple[np.ndarray, np.ndarray] | None = None  # (chunk ids, matrix)

    def _record_origins(self) -> None:
        """An index written before origins were recorded learns them (`contained.origins`),
        in one transaction: a crash leaves it to learn them again."""
        paths = [r[0] for r in self.db.execute("SELECT path FROM documents")]
        found = origins(paths, self.folders())
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if "via" in {r[1] for r in self.db.execute("PRAGMA table_info(documents)")}:
                return  # another opening of the index learnt them meanwhile
            self.db.execute("ALTER TABLE documents ADD COLUMN source TEXT NOT NULL DEFAULT ''")
            self.db.execute("ALTER TABLE documents ADD COLUMN via TEXT NOT NULL DEFAULT ''")
            self.db.executemany(
                "UPDATE documents SET source = ?, via = ? WHERE path = ?",
                [(source, via, path) for path, (source, via) in found.items()],
            )

    def close(self) -> None:
        self.db.close()

    def add_folder(self, folder: Path) -> list[Added]:
        """Index the files inside `folder` and remember it, so `refresh` finds new files; the
        links leading out of it are skipped, each an `Added` of kind `SKIPPED` whose notice
        says so (nothing of them is read), and the files indexed through them before are
        removed, said the same way (`removed`)."""
        folder = folder.resolve()
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO folders VALUES (?)", (str(folder),))
        walked = walk(folder)
        removed = self._purge(str(folder))
        said = {a.path for a in removed}
        skipped = [Added(str(p), SKIPPED, 0, n) for p, n in walked.skipped if str(p) not in said]
        return [self.add(p, folder=folder) for p in walked.files] + removed + skipped

    def _purge(self, folder: str | None = None) -> list[Added]:
        """Remove the files found in `folder` (None: in any) whose path no longer resolves
        inside it: each a `SKIPPED`, `removed` `Added` named by the path it was found by."""
        rows = self.db.execute(
            "SELECT path, source, via FROM documents WHERE via != '' AND via = coalesce(?, via)",
            (folder,),
        ).fetchall()
        out = [(path, source, via) for path, source, via in rows if not inside(path, via)]
        if not out:
            return []
        with self.db:
            self.db.executemany("DELETE FROM documents WHERE path = ?", [(r[0],) for r in out])
        self._vectors = None
        removed = []
        for path, source, via in out:
            notice = removed_notice(str(Path(path).resolve()), via)
            log.warning("the library removed %s: %s", source or path, notice)
            removed.append(Added(source or path, SKIPPED, 0, notice, removed=True))
        return removed

    def folders(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM folders ORDER BY path")]

    def add(self, path: Path, *, folder: Path | None = None) -> Added:
        """Index `path` (see the module guarantees), found by the walk of `folder` (resolved:
        the file is held to it) or named on its own (None)."""
        return self._add(path, str(path.absolute()), str(folder or ""))

    def _add(self, path: Path, source: str, via: str) -> Added:
        """Index `path`, reached by `source` in the folder `via` ("": named on its own; a file
        a folder found before stays held to that folder)."""
        path = path.resolve()
        stamp = _stamp(path) if path.is_file() else ""
        row = self.db.execute(
            "SELECT sha256, kind, notice, embedder, (SELECT count(*) FROM chunks WHERE"
            " document = documents.id), stamp, source, via FROM documents WHERE path = ?",
            (str(path),),
        ).fetchone()
        if row is not None and row[7] and not via:
            source, via = row[6], row[7]
        if row is not None and row[3] == embed.NAME and stamp and row[5] == stamp:
            if (row[6], row[7]) != (source, via):
                self._keep(path, stamp, source, via)
            return Added(str(path), row[1], row[4], row[2], unchanged=True)
        digest = hashlib.sha256().hexdigest()
        if path.is_file():
            try:
                with path.open("rb") as f:  # streamed: any size is hashed in small reads
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError as exc:  # unreadable (permissions, gone meanwhile): said, kept
                said = f"the file could not be read ({exc.strerror})"
                unread = Extracted(str(path), "text", notice=said)
                return self.add_extracted(path, unread, source=source, via=via)
        if row is not None and row[0] == digest and row[3] == embed.NAME:
            self._keep(path, stamp, source, via)  # touched, not changed: not read again
            return Added(str(path), row[1], row[4], row[2], unchanged=True)
        return self.add_extracted(path, extract(path), digest, stamp, source=source, via=via)

    def _keep(self, path: Path, stamp: str, source: str, via: str) -> None:
        """An unchanged file's new stamp (it saves the next comparison) and origin."""
        with self.db:
            self.db.execute(
                "UPDATE documents SET stamp = ?, source = ?, via = ? WHERE path = ?",
                (stamp, source, via, str(path)),
            )

    def add_extracted(
        self,
        path: Path,
        extracted: Extracted,
        digest: str = "",
        stamp: str = "",
        *,
        source: str = "",
        via: str = "",
    ) -> Added:
        """Index what was already extracted from `path` (reached by `source` in the folder
        `via`; see `add`)."""
        pieces = chunks(extracted)
        vectors = embed.embed([c.text for c in pieces])
        with self.db:
            self.db.execute("DELETE FROM documents WHERE path = ?", (str(path),))
            cursor = self.db.execute(
                "INSERT INTO documents(path, sha256, kind, notice, added, embedder, stamp,"
                " source, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(path),
                    digest,
                    extracted.kind,
                    extracted.notice,
                    time.time(),
                    embed.NAME,
                    stamp,
                    source,
                    via,
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
        (those new, read again or unchanged, then those removed as reached through a link
        leading out of their folder; those gone)."""
        removed = self._purge()
        rows = self.db.execute("SELECT path, source, via FROM documents").fetchall()
        found = {Path(path): (source, via) for path, source, via in rows}
        gone = sorted(str(p) for p in found if not p.is_file())
        for path in gone:
            self.remove(Path(path))
            del found[Path(path)]
        for folder in (Path(f) for f in self.folders() if Path(f).is_dir()):
            walked = walk(folder)
            found.update((p.resolve(), (str(p), str(folder))) for p in walked.files)
            for link, said in walked.skipped:
                log.info("the library skips %s: %s", link, said)
        return [self._add(p, *found[p]) for p in sorted(found)] + removed, gone

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
        """The `k` best chunks for `query`, best first (BM25 alone when not `hybrid`), never
        one of a file whose path no longer resolves inside the folder it was found in."""
        fused: dict[int, float] = {}
        rankings = [self._words(query, POOL)] + ([self._meaning(query, POOL)] if hybrid else [])
        for ranking in rankings:
            for rank, chunk in enumerate(ranking):
                fused[chunk] = fused.get(chunk, 0.0) + 1.0 / (RRF_K + rank + 1)
        hits: list[Hit] = []
        held: dict[str, bool] = {}  # document path: whether it lies inside its folder now
        for chunk, score in sorted(fused.items(), key=lambda kv: -kv[1]):
            if len(hits) >= k:
                break
            row = self.db.execute(
                "SELECT d.path, d.via, c.page, c.first_line, c.last_line, c.text FROM chunks c"
                " JOIN documents d ON d.id = c.document WHERE c.id = ?",
                (chunk,),
            ).fetchone()
            if row[0] not in held:
                held[row[0]] = self._inside(row[0], row[1])
            if held[row[0]]:
                hits.append(Hit(row[0], row[2], (row[3], row[4]), row[5], round(score, 6)))
        return hits

    @staticmethod
    def _inside(path: str, via: str) -> bool:
        """Whether a file may be searched: named on its own, or inside its folder now."""
        if not via or inside(path, via):
            return True
        log.warning("the library withholds %s: it lies outside %s, where it was found", path, via)
        return False


__all__ = ["SKIPPED", "Added", "DocumentIndex", "Hit", "Walked", "files_in", "walk"]
