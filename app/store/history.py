"""Conversations in SQLite: the window's conversation tree, checkpoints, trash and search.

Guarantees:
- a conversation is stored as its whole tree: turns, every version of a user message, every
  reply of a version (regenerations), the model messages of each reply, its visible segments,
  its debug record (analysis included) and its tool calls, and each version's images (what
  identifies and describes them: their bytes are kept apart with the attached files,
  `app/documents/kept.py`); `load` gives back the same tree,
  leaving each reply's model messages as text until first used and its debug record (prompt
  and token ids, analysis, events: kept compressed in a table of their own) in the file until
  the debug pane or a continuation asks (`debug`);
- `checkpoint` writes one reply (state, segments, messages, tool calls, search text) in one
  transaction: what was committed survives a crash of the app, and a reply that was still
  streaming comes back marked incomplete (E-STREAM-TRUNCATED) so it can be continued or
  regenerated;
- delete moves a conversation to the trash (`deleted_at`); undo and restore bring it back;
  only `purge` (the user, or the retention period) removes rows; its KV snapshots
  (`app/kvcache.py`: a cache of what the model read of it) go at once when it is deleted;
- search (FTS5) covers titles, user messages and the visible text of replies; analysis is not in
  the index (the debug pane searches it separately with `search_analysis`), nor are images
  (not even their names); the sidebar's search lists each match with the excerpt around it
  (`listed`);
- a failed write (a full disk) raises `StoreError` and rolls back: nothing committed earlier is
  touched.
"""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

from app.domain.history import ChatDoc, DebugRecord, Reply, Version, snippet
from app.kvcache import forget, own_root
from app.store.database import StoreError, StoreProblem, open_database
from app.store.rows import (
    REPLY_COLUMNS,
    Rows,
    all_rows,
    build_doc,
    build_reply,
    conversation_row,
    debug_record,
    reply_rows,
    structure_rows,
)
from app.store.search import found, fts_query


class HistoryStore:
    """The conversations of one database file (thread-safe: one writer at a time)."""

    def __init__(self, path: Path | None = None, snapshots: Path | None = None) -> None:
        opened = open_database(path)
        self.db = opened.connection
        self.migrated = opened.migrated
        self.backup = opened.backup
        self.path = Path(self.db.execute("PRAGMA database_list").fetchone()[2])
        self._lock = threading.RLock()
        self._snapshots = snapshots

    @cached_property
    def snapshots(self) -> Path | None:
        """These conversations' KV snapshots: this install's key's folder (`kvcache.own_root`,
        found when first needed) unless given; None: no key, nothing kept on disk."""
        return self._snapshots or own_root()

    def close(self) -> None:
        with self._lock:
            self.db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self.db.execute("BEGIN IMMEDIATE")
                yield self.db
                self.db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise StoreError(StoreProblem.UNWRITABLE, self.path, str(exc)) from exc
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    # --- writing ------------------------------------------------------------------------

    def new(self, title: str = "New chat") -> ChatDoc:
        doc = ChatDoc(title=title)
        self.save(doc)
        return doc

    def save(self, doc: ChatDoc) -> None:
        """Write the whole conversation (every branch and reply)."""
        self.write(all_rows(doc))

    def save_many(self, docs: list[ChatDoc]) -> None:
        """Write several conversations in one transaction: all of them or none."""
        rows = [all_rows(doc) for doc in docs]
        with self._lock:
            self.db.execute("SAVEPOINT many")
            try:
                for r in rows:
                    self._upsert(self.db, r)
                self.db.execute("RELEASE many")
            except sqlite3.Error as exc:
                self.db.execute("ROLLBACK TO many")
                self.db.execute("RELEASE many")
                raise StoreError(StoreProblem.UNWRITABLE, self.path, str(exc)) from exc

    def checkpoint(self, doc: ChatDoc, version: Version, reply: Reply) -> None:
        """Save the conversation's structure and one reply now (while it streams, at the end)."""
        with self._lock:
            known = self.db.execute("SELECT 1 FROM versions WHERE id = ?", (version.id,)).fetchone()
        rows = reply_rows(doc, version, reply, None if known else structure_rows(doc))
        if known:
            rows.conversation = conversation_row(doc)
        self.write(rows)

    def write(self, rows: Rows) -> None:
        """Upsert `rows` in one transaction (the rows can be taken on another thread)."""
        with self._write() as db:
            self._upsert(db, rows)

    def _upsert(self, db: sqlite3.Connection, rows: Rows) -> None:
        if rows.conversation is not None:
            db.execute(
                "INSERT INTO conversations (id, title, pinned, options, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                " title = excluded.title, pinned = excluded.pinned,"
                " options = excluded.options, updated = excluded.updated",
                rows.conversation,
            )
        db.executemany(
            "INSERT INTO turns (id, conversation_id, after_version, position, chosen)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " after_version = excluded.after_version, position = excluded.position,"
            " chosen = excluded.chosen",
            rows.turns,
        )
        db.executemany(
            "INSERT INTO versions (id, turn_id, position, user_text, effort, json_schema,"
            " chosen, images) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " position = excluded.position, chosen = excluded.chosen, images = excluded.images",
            rows.versions,
        )
        db.executemany(
            "INSERT INTO replies (id, version_id, position, state, error, model, stop_reason,"
            " sampling, timings, segments, open_segments, bodies, updated, conversation_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " state = excluded.state, error = excluded.error, model = excluded.model,"
            " stop_reason = excluded.stop_reason, sampling = excluded.sampling,"
            " timings = excluded.timings, segments = excluded.segments,"
            " open_segments = excluded.open_segments, bodies = excluded.bodies,"
            " updated = excluded.updated",
            rows.replies,
        )
        for reply_id, blob in rows.debug.items():
            if blob is None:
                db.execute("DELETE FROM debug_records WHERE reply_id = ?", (reply_id,))
            else:
                db.execute(
                    "INSERT OR REPLACE INTO debug_records (reply_id, record) VALUES (?, ?)",
                    (reply_id, blob),
                )
        for reply_id, messages in rows.messages.items():
            db.execute("DELETE FROM messages WHERE reply_id = ?", (reply_id,))
            db.executemany(
                "INSERT INTO messages (reply_id, position, role, name, channel, recipient,"
                " content_type, text, intent, call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                messages,
            )
        for reply_id, calls in rows.tool_calls.items():
            db.execute("DELETE FROM tool_calls WHERE reply_id = ?", (reply_id,))
            db.executemany(
                "INSERT INTO tool_calls (reply_id, call_id, tool, record) VALUES (?, ?, ?, ?)",
                calls,
            )
        for text, conversation_id, kind, ref in rows.search:
            self._index(db, text, conversation_id, kind, ref)

    @staticmethod
    def _index(
        db: sqlite3.Connection, text: str, conversation_id: str, kind: str, ref: str
    ) -> None:
        """Put `text` in the full-text index under (kind, ref); a user message never changes,
        so it is indexed once; titles and answers are replaced."""
        added = db.execute(
            "INSERT INTO search_keys (kind, ref, conversation_id) VALUES (?, ?, ?)"
            " ON CONFLICT (kind, ref) DO NOTHING",
            (kind, ref, conversation_id),
        ).rowcount
        rowid = db.execute(
            "SELECT rowid FROM search_keys WHERE kind = ? AND ref = ?", (kind, ref)
        ).fetchone()[0]
        if added:
            db.execute(
                "INSERT INTO search (rowid, text, conversation_id, kind, ref)"
                " VALUES (?, ?, ?, ?, ?)",
                (rowid, text, conversation_id, kind, ref),
            )
        elif kind != "user":
            db.execute("UPDATE search SET text = ? WHERE rowid = ?", (text, rowid))

    # --- reading ------------------------------------------------------------------------

    def load(self, doc_id: str) -> ChatDoc | None:
        """The conversation's whole tree (a reply that was streaming comes back incomplete)."""
        collecting = gc.isenabled()
        gc.disable()  # many small objects at once: the cyclic collector would rescan the heap
        try:
            return self._load(doc_id)
        finally:
            if collecting:
                gc.enable()

    def _load(self, doc_id: str) -> ChatDoc | None:
        with self._lock:
            conversation = self.db.execute(
                "SELECT id, title, pinned, options, created, updated FROM conversations"
                " WHERE id = ?",
                (doc_id,),
            ).fetchone()
            if conversation is None:
                return None
            turns = self.db.execute(
                "SELECT id, after_version, position, chosen FROM turns"
                " WHERE conversation_id = ? ORDER BY position",
                (doc_id,),
            ).fetchall()
            versions = self.db.execute(
                "SELECT versions.id, turn_id, user_text, effort, json_schema, versions.chosen,"
                " versions.images FROM versions JOIN turns ON turns.id = turn_id"
                " WHERE conversation_id = ? ORDER BY turn_id, versions.position",
                (doc_id,),
            ).fetchall()
            reply_rows_ = self.db.execute(
                f"SELECT {REPLY_COLUMNS} FROM replies"
                " WHERE conversation_id = ? ORDER BY version_id, position",
                (doc_id,),
            ).fetchall()
        replies: dict[str, list[Reply]] = {}
        for row in reply_rows_:
            replies.setdefault(row[1], []).append(build_reply(row, self.debug))
        return build_doc(conversation, turns, versions, replies)

    def get(self, doc_id: str) -> ChatDoc | None:
        return self.load(doc_id)

    def debug(self, reply_id: str) -> DebugRecord:
        """A stored reply's debug record (what the debug pane shows; read when asked for)."""
        with self._lock:
            row = self.db.execute(
                "SELECT record, sampling, stop_reason, timings FROM replies"
                " LEFT JOIN debug_records ON reply_id = id WHERE id = ?",
                (reply_id,),
            ).fetchone()
        return debug_record(*row) if row is not None else DebugRecord()

    def listed(self, search: str = "") -> list[ChatDoc]:
        """Conversations not in the trash, pinned first then newest (by last activity:
        `updated`); with `search`, only those whose title, messages or visible answers match
        (full-text), each with `found`, the excerpt around the match (`app.store.search`)."""
        with self._lock:
            hits = found(self.db, search) if search.strip() else None
            rows = self.db.execute(
                "SELECT id, title, pinned, created, updated, json_extract(options, '$.endpoint')"
                " FROM conversations WHERE deleted_at IS NULL ORDER BY pinned DESC, updated DESC"
            ).fetchall()
        return [
            ChatDoc(
                title=r[1],
                id=r[0],
                pinned=bool(r[2]),
                created=r[3],
                updated=r[4],
                endpoint=r[5],
                found=hits.get(r[0], ()) if hits is not None else (),
            )
            for r in rows
            if hits is None or r[0] in hits
        ]

    def search(self, text: str, limit: int = 50) -> list[tuple[str, str, str]]:
        """(conversation id, kind, snippet) of the best matches of `text` in visible text."""
        query = fts_query(text)
        if not query:
            return []
        with self._lock:
            return [
                (r[0], r[1], r[2])
                for r in self.db.execute(
                    "SELECT conversation_id, kind, snippet(search, 0, '[', ']', '…', 12)"
                    " FROM search JOIN conversations ON conversations.id = conversation_id"
                    " WHERE search MATCH ? AND deleted_at IS NULL ORDER BY rank LIMIT ?",
                    (query, limit),
                )
            ]

    def search_analysis(self, doc_id: str, text: str) -> list[tuple[str, str]]:
        """(reply id, snippet) of this conversation's replies whose analysis contains `text`
        (the debug pane's search: analysis is not in the full-text index)."""
        with self._lock:
            rows = self.db.execute(
                "SELECT id, record FROM replies JOIN debug_records ON reply_id = id"
                " WHERE conversation_id = ?",
                (doc_id,),
            ).fetchall()
        found = [
            (rid, snippet(debug_record(blob, "", "", "{}").analysis, text)) for rid, blob in rows
        ]
        return [(rid, text) for rid, text in found if text is not None]

    # --- trash --------------------------------------------------------------------------

    def rename(self, doc_id: str, title: str) -> None:
        if title.strip():
            with self._write() as db:
                db.execute(
                    "UPDATE conversations SET title = ? WHERE id = ?", (title.strip(), doc_id)
                )
                self._index(db, title.strip(), doc_id, "title", doc_id)

    def pin(self, doc_id: str, pinned: bool = True) -> None:
        with self._write() as db:
            db.execute("UPDATE conversations SET pinned = ? WHERE id = ?", (int(pinned), doc_id))

    def delete(self, doc_id: str) -> None:
        """To the trash (nothing is removed but its KV snapshots, a cache)."""
        with self._write() as db:
            db.execute(
                "UPDATE conversations SET deleted_at = ? WHERE id = ?", (time.time(), doc_id)
            )
        forget(self.snapshots, doc_id)

    def undo_delete(self) -> str | None:
        """Bring back the conversation deleted last; its id."""
        with self._lock:
            row = self.db.execute(
                "SELECT id FROM conversations WHERE deleted_at IS NOT NULL"
                " ORDER BY deleted_at DESC LIMIT 1"
            ).fetchone()
        if row is None:
            return None
        self.restore(row[0])
        return str(row[0])

    def restore(self, doc_id: str) -> None:
        with self._write() as db:
            db.execute("UPDATE conversations SET deleted_at = NULL WHERE id = ?", (doc_id,))

    def all_ids(self) -> set[str]:
        """Every conversation kept, the trashed ones included."""
        with self._lock:
            return {r[0] for r in self.db.execute("SELECT id FROM conversations")}

    def trash(self) -> list[tuple[str, str, float]]:
        """(id, title, deleted at) of the conversations in the trash."""
        with self._lock:
            return [
                (r[0], r[1], r[2])
                for r in self.db.execute(
                    "SELECT id, title, deleted_at FROM conversations"
                    " WHERE deleted_at IS NOT NULL ORDER BY deleted_at DESC"
                )
            ]

    def purge(self, doc_id: str | None = None, *, older_than_days: float | None = None) -> int:
        """Remove conversations from the trash for good: one, or those deleted before the
        retention period; the number removed."""
        with self._write() as db:
            if doc_id is not None:
                query = "SELECT id FROM conversations WHERE id = ? AND deleted_at IS NOT NULL"
                ids = [r[0] for r in db.execute(query, (doc_id,))]
            else:
                limit = time.time() - (older_than_days or 0) * 86400
                query = (
                    "SELECT id FROM conversations WHERE deleted_at IS NOT NULL AND deleted_at < ?"
                )
                ids = [r[0] for r in db.execute(query, (limit,))]
            for i in ids:
                db.execute(
                    "DELETE FROM search WHERE rowid IN"
                    " (SELECT rowid FROM search_keys WHERE conversation_id = ?)",
                    (i,),
                )
                db.execute("DELETE FROM search_keys WHERE conversation_id = ?", (i,))
                db.execute("DELETE FROM conversations WHERE id = ?", (i,))
                forget(self.snapshots, i)
            return len(ids)


__all__ = ["HistoryStore"]
