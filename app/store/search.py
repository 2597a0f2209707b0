"""The sidebar's search in the store: which conversations match, and the excerpt to show.

Guarantees: the user's text is never FTS syntax (`fts_query` quotes every word and
prefix-matches it); `found` runs on the caller's connection (the store's thread, under its
lock) and gives, for every conversation whose indexed text matches, an excerpt around the
match — from what the user wrote or a visible reply first (the first indexed), else the
title, else the text of a document attached to a message (marked 📎, with the file's name);
the index never holds analysis, so an excerpt never shows it. Only a few texts per
conversation are read, whatever the number of matches, and matches are not ranked (every
match of a several-word search holds every word): a search over hundreds of long
conversations stays within tens of milliseconds.
"""

from __future__ import annotations

import sqlite3

from app.domain import attachments
from app.domain.listing import Excerpt, attached_excerpt, excerpt

TRIED = 3  # texts read per conversation to find its excerpt
_PREFERENCE = {"user": 0, "reply": 0, "title": 1}


def fts_query(text: str) -> str:
    """User text as an FTS5 query: every word quoted (never FTS syntax), prefix-matched."""
    return " ".join(f'"{w.replace(chr(34), "")}"*' for w in text.split())


def found(db: sqlite3.Connection, text: str) -> dict[str, Excerpt]:
    """Conversation id → the excerpt around the match of `text` (empty when no excerpt could
    be made) for every conversation whose indexed text matches (see the module guarantees)."""
    query = fts_query(text)
    if not query:
        return {}
    try:
        rows = db.execute(
            "SELECT rowid, conversation_id, kind FROM search WHERE search MATCH ?",
            (query,),
        ).fetchall()
    except sqlite3.OperationalError:
        return {}
    tried: dict[str, list[tuple[int, str]]] = {}
    for rowid, conversation_id, kind in sorted(
        rows, key=lambda r: (_PREFERENCE.get(r[2], 2), r[0])
    ):
        chosen = tried.setdefault(conversation_id, [])
        if len(chosen) < TRIED:
            chosen.append((rowid, kind))
    texts = _texts(db, [rowid for chosen in tried.values() for rowid, _ in chosen])
    words = text.split()
    return {cid: _best(chosen, texts, words) for cid, chosen in tried.items()}


def _texts(db: sqlite3.Connection, rowids: list[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for at in range(0, len(rowids), 500):
        batch = rowids[at : at + 500]
        marks = ",".join("?" * len(batch))
        out.update(db.execute(f"SELECT rowid, text FROM search WHERE rowid IN ({marks})", batch))
    return out


def _best(chosen: list[tuple[int, str]], texts: dict[int, str], words: list[str]) -> Excerpt:
    """The first excerpt the chosen texts give; a user message's attached documents last."""
    contexts: list[str] = []
    for rowid, kind in chosen:
        text = texts.get(rowid, "")
        if kind == "user":
            context, text = attachments.split(text)
            contexts.append(context)
        if (excerpt_ := excerpt(text, words)) is not None:
            return excerpt_
    for context in contexts:
        if (excerpt_ := attached_excerpt(context, words)) is not None:
            return excerpt_
    return ()


__all__ = ["found", "fts_query"]
