"""Empty chats left by earlier sessions, removed once when the window opens.

Before empty chats were dropped on leaving them (`ConversationsController.empty`), every New
chat the user left unused stayed in the history as a "New chat" row. They are cleaned up here,
once, at start.

Guarantees: only a chat saved before this session (`updated` before `started`) that has no
message, no instructions, its first title and is not pinned is removed — for good, not to the
trash (there is nothing in it to bring back); a chat that holds a draft, files or a queued
message belongs to this session, so it is never one of them; the work runs on the store's
thread, before the chat shown at start is chosen (so it is never a chat about to go), and a
store that cannot be written leaves everything as it was, logged, never said as a failed save.
"""

from __future__ import annotations

import logging

from app.domain.history import ChatDoc, ConversationList
from app.store.database import StoreError
from app.store.history import HistoryStore

log = logging.getLogger("store")

NEW_TITLE = "New chat"  # a conversation's title until its first message names it


def left_empty(doc: ChatDoc) -> bool:
    """Whether `doc` (read whole) has nothing of the user's: no message, no instructions, its
    first title, not pinned."""
    untouched = doc.title == NEW_TITLE and not doc.pinned
    return untouched and not doc.turns and not doc.instructions.strip()


def drop_left_empty(conversations: ConversationList | HistoryStore, started: float) -> list[str]:
    """Remove the empty chats saved before `started` (see the module guarantees); their ids."""
    candidates = [
        doc.id
        for doc in conversations.listed()
        if doc.title == NEW_TITLE and not doc.pinned and doc.updated < started
    ]
    dropped = []
    try:
        for doc_id in candidates:
            doc = conversations.get(doc_id)  # an empty one is a few rows: cheap to read
            if doc is not None and left_empty(doc):
                conversations.delete(doc_id)
                conversations.purge(doc_id)
                dropped.append(doc_id)
    except StoreError as exc:
        log.warning("Empty chats from before were not cleaned up: %s", exc.message)
    return dropped


__all__ = ["NEW_TITLE", "drop_left_empty", "left_empty"]
