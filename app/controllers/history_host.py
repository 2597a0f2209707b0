"""Opening the conversation history for the window, with a way out when the file is bad.

Guarantees: a database that is damaged, not a database, or from a newer app version is never
changed; the user chooses between the copy taken before the last upgrade (copied to a new file
and opened), a fresh database in a new file, or quitting; the file chosen is remembered in the
window state, so the next start opens it without asking again; conversations in the trash for
longer than the retention period in the settings are removed when the history opens, and
with them the attached files no remaining conversation uses.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from app.controllers.ui_state import UiState
from app.documents.kept import collect_kept
from app.kvcache import sweep
from app.settings import load_settings
from app.store.database import StoreError, default_path
from app.store.history import HistoryStore

Choice = Literal["backup", "fresh", "quit"]


def open_history(
    choose: Callable[[StoreError], Choice], state: UiState | None = None
) -> HistoryStore | None:
    """The history store (None when the user chose to quit)."""
    state = state or UiState()
    remembered = state.get("history_db")
    path = Path(str(remembered)) if remembered else default_path()
    retention = load_settings().trash_retention_days
    try:
        store = HistoryStore(path)
        store.purge(older_than_days=retention)  # the retention period the user set
        collect_kept(store.all_ids())  # and the attached files no conversation uses now
        return store
    except StoreError as exc:
        choice = choose(exc)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        if choice == "backup" and exc.backups:
            target = path.with_name(f"history-restored-{stamp}.db")
            shutil.copy2(exc.backups[-1], target)
        elif choice in ("fresh", "backup"):
            target = path.with_name(f"history-fresh-{stamp}.db")
        else:
            return None
        store = HistoryStore(target)
        state.set("history_db", str(target))
        return store


def sweep_snapshots(store: HistoryStore) -> None:
    """Remove the KV snapshots of conversations gone (deleted while the app was away). It
    reads the install's key to find its folder (the keyring: a D-Bus call), so the window runs
    it off the GUI thread once it is shown, never on the start path."""
    sweep(store.snapshots, store.all_ids())


__all__ = ["Choice", "HistoryStore", "StoreError", "open_history", "sweep_snapshots"]
