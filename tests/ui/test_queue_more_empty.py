"""Empty chats left from before the empty-chat fix are cleaned up at start: a chat with no
message, no instructions, its first title and not pinned, saved before this session, is
removed from the store once when the window opens (for good, not to the trash), and the chat
shown at start is the newest one left; a chat the user named, pinned or gave instructions is
kept, and so is a chat made in this session. The real window, sidebar and SQLite file,
offscreen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.domain.history import ChatDoc, Turn, Version
from app.store.history import HistoryStore
from tests.ui.test_chat_queue import _new_chat
from tests.ui.test_empty_chats import listed
from tests.ui.test_window import make_window


def _earlier_session(path: Path) -> dict[str, str]:
    """What an earlier version of the app left in the history: a chat with a message, then
    (newer) empty "New chat" rows and empty chats the user did something with."""
    store = HistoryStore(path)
    spoken = ChatDoc(title="Hello there")
    spoken.turns.append(Turn([Version("Hello there")]))
    named = ChatDoc(title="Ideas")
    pinned = ChatDoc(pinned=True)
    instructed = ChatDoc(instructions="Answer in French.")
    empties = [ChatDoc(), ChatDoc()]
    for doc in (spoken, named, pinned, instructed, *empties):
        store.save(doc)
    store.close()
    ids = {"spoken": spoken.id, "named": named.id, "pinned": pinned.id}
    ids |= {"instructed": instructed.id, "empty0": empties[0].id, "empty1": empties[1].id}
    return ids


def test_empty_chats_from_before_are_dropped_once_at_start(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    path = tmp_path / "history.db"
    ids = _earlier_session(path)
    store = HistoryStore(path)
    window, _ = make_window(qtbot, tmp_path, [], store=store)
    c = window.controller
    c.settle()
    kept = {ids[name] for name in ("spoken", "named", "pinned", "instructed")}
    assert store.all_ids() == kept  # gone for good: not in the trash either
    assert not c.trash()
    qtbot.waitUntil(lambda: set(listed(window)) == kept)
    assert c.doc.id in kept  # the newest chat left is shown, not a dropped one
    fresh = _new_chat(qtbot, window)  # a chat of this session is the user's
    c.settle()
    assert fresh.id in store.all_ids() and fresh.id in listed(window)


def test_a_history_of_only_empty_chats_starts_on_one_new_chat(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    path = tmp_path / "history.db"
    store = HistoryStore(path)
    old = [ChatDoc(), ChatDoc(), ChatDoc()]
    for doc in old:
        store.save(doc)
    window, _ = make_window(qtbot, tmp_path, [], store=store)
    c = window.controller
    c.settle()
    remaining = store.all_ids()
    assert len(remaining) == 1 and not remaining & {doc.id for doc in old}
    assert c.doc.id in remaining and not c.doc.turns
