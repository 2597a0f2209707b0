"""Opening the history database: WAL, foreign keys, small named migrations, a backup first.

Guarantees:
- one SQLite file (default `history.db` in the data folder), WAL journal, foreign keys on,
  a busy timeout so a reader never fails while the writer commits;
- migrations are small, named and ordered; `PRAGMA user_version` counts those applied; before
  any migration runs on an existing file, a copy of it is taken beside it
  (`history.db.before-<name>`), made with SQLite's online backup;
- a file that is not a database, fails its quick check, or comes from a newer version of the app
  is refused with a `StoreError` that says which, and the file is left exactly as it was (it is
  first opened read-only); the caller can offer the backup or a fresh database;
- the database, its `-wal`/`-shm` files and the backups are 0600 from their creation, in a
  folder made 0700, whatever the umask (`app.fileio.connect_private`).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from app.errors import ErrorCode, HarmonyDeskError
from app.fileio import connect_private, private_folder
from app.paths import data_dir

SCHEMA_1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    options TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    deleted_at REAL
);
CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    after_version TEXT,
    position INTEGER NOT NULL,
    chosen INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX turns_by_conversation ON turns(conversation_id);
CREATE TABLE versions (
    id TEXT PRIMARY KEY,
    turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    user_text TEXT NOT NULL,
    effort TEXT,
    json_schema TEXT,
    chosen INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX versions_by_turn ON versions(turn_id);
CREATE TABLE replies (
    id TEXT PRIMARY KEY,
    version_id TEXT NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    state TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    stop_reason TEXT NOT NULL DEFAULT '',
    sampling TEXT NOT NULL DEFAULT '',
    timings TEXT NOT NULL DEFAULT '{}',
    segments TEXT NOT NULL DEFAULT '[]',
    debug TEXT NOT NULL DEFAULT '{}',
    bodies TEXT NOT NULL DEFAULT '[]',
    updated REAL NOT NULL
);
CREATE INDEX replies_by_version ON replies(version_id);
CREATE TABLE messages (
    reply_id TEXT NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    name TEXT,
    channel TEXT,
    recipient TEXT,
    content_type TEXT,
    text TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (reply_id, position)
);
CREATE TABLE tool_calls (
    reply_id TEXT NOT NULL REFERENCES replies(id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX tool_calls_by_reply ON tool_calls(reply_id);
CREATE TABLE search_keys (
    rowid INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    UNIQUE (kind, ref)
);
CREATE INDEX search_keys_by_conversation ON search_keys(conversation_id);
CREATE VIRTUAL TABLE search USING fts5(
    text, conversation_id UNINDEXED, kind UNINDEXED, ref UNINDEXED, tokenize = 'unicode61'
);
"""

SCHEMA_2 = """
ALTER TABLE replies ADD COLUMN conversation_id TEXT;
UPDATE replies SET conversation_id = (
    SELECT turns.conversation_id FROM versions JOIN turns ON turns.id = versions.turn_id
    WHERE versions.id = replies.version_id
);
CREATE INDEX replies_by_conversation ON replies(conversation_id, version_id, position)
"""

SCHEMA_3 = """
CREATE TABLE debug_records (
    reply_id TEXT PRIMARY KEY REFERENCES replies(id) ON DELETE CASCADE,
    record BLOB NOT NULL
);
INSERT INTO debug_records (reply_id, record) SELECT id, debug FROM replies WHERE debug != '{}';
ALTER TABLE replies ADD COLUMN open_segments TEXT NOT NULL DEFAULT '{}';
UPDATE replies SET open_segments = coalesce(json_extract(debug, '$.open_segments'), '{}');
ALTER TABLE replies DROP COLUMN debug;
ALTER TABLE messages DROP COLUMN body;
ALTER TABLE messages ADD COLUMN intent TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN call_id TEXT
"""

SCHEMA_4 = """
ALTER TABLE versions ADD COLUMN images TEXT NOT NULL DEFAULT '[]'
"""

MIGRATIONS: list[tuple[str, str]] = [
    ("initial", SCHEMA_1),
    ("replies-by-conversation", SCHEMA_2),  # opening a conversation reads its replies directly
    # debug records (prompt and token ids, analysis, events) in their own table, compressed and
    # read when the debug pane asks; messages gain what they are for (intent) and their call id,
    # and lose a second copy of their body
    ("debug-records-apart", SCHEMA_3),
    # a user message's images: what identifies and describes each (JSON of ImageContent), the
    # bytes kept apart with the attached files (app/documents/kept.py)
    ("version-images", SCHEMA_4),
]


class StoreProblem(StrEnum):
    NOT_A_DATABASE = "not a database"
    DAMAGED = "damaged"
    NEWER = "from a newer version"
    UNWRITABLE = "cannot be written"


class StoreError(HarmonyDeskError):
    """The history database cannot be used; the file is untouched."""

    code = ErrorCode.RESOURCE

    def __init__(self, problem: StoreProblem, path: Path, detail: str) -> None:
        backups = sorted(path.parent.glob(path.name + ".before-*"))
        offer = f"; a copy from before the last upgrade is {backups[-1]}" if backups else ""
        super().__init__(
            f"the history database {path} is {problem.value} ({detail}); it was left untouched"
            f"{offer}; Harmony Desk can start with a fresh database instead"
        )
        self.problem = problem
        self.path = path
        self.backups = backups


@dataclass(frozen=True)
class Opened:
    connection: sqlite3.Connection
    migrated: tuple[str, ...]  # names of the migrations applied now
    backup: Path | None  # the copy taken before them


def default_path() -> Path:
    return data_dir() / "history.db"


def _check_existing(path: Path) -> int:
    """The schema version of an existing file, read without changing it."""
    try:
        probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(StoreProblem.NOT_A_DATABASE, path, str(exc)) from exc
    try:
        version = int(probe.execute("PRAGMA user_version").fetchone()[0])
        verdict = probe.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        not_db = getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB
        problem = StoreProblem.NOT_A_DATABASE if not_db else StoreProblem.DAMAGED
        raise StoreError(problem, path, str(exc)) from exc
    finally:
        probe.close()
    if verdict != "ok":
        raise StoreError(StoreProblem.DAMAGED, path, f"quick_check: {verdict}")
    if version > len(MIGRATIONS):
        raise StoreError(
            StoreProblem.NEWER,
            path,
            f"schema version {version}; this version of the app knows up to {len(MIGRATIONS)}",
        )
    return version


def open_database(path: Path | None = None) -> Opened:
    """Open (creating or upgrading) the history database at `path`."""
    path = path or default_path()
    existed = path.exists() and path.stat().st_size > 0
    version = _check_existing(path) if existed else 0
    try:
        private_folder(path.parent)
        if path.parent.resolve() == data_dir().resolve():
            os.chmod(path.parent, 0o700)  # the history, the audit log, workspaces: the user's only
        connection = connect_private(
            path, timeout=10, isolation_level=None, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("PRAGMA synchronous = NORMAL")
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(StoreProblem.UNWRITABLE, path, str(exc)) from exc
    pending = MIGRATIONS[version:]
    backup: Path | None = None
    if pending and existed:
        backup = path.with_name(f"{path.name}.before-{pending[0][0]}")
        target = connect_private(backup)
        with target:
            connection.backup(target)
        target.close()
    for number, (_name, sql) in enumerate(pending, start=version + 1):
        connection.execute("BEGIN IMMEDIATE")  # a migration applies whole or not at all
        try:
            for statement in sql.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {number}")
            connection.execute("COMMIT")
        except sqlite3.Error:
            connection.execute("ROLLBACK")
            connection.close()
            raise
    return Opened(connection, tuple(n for n, _ in pending), backup)


__all__ = ["MIGRATIONS", "Opened", "StoreError", "StoreProblem", "default_path", "open_database"]
