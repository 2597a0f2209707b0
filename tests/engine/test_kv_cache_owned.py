"""KV snapshots are owned like their conversation, with the real terminal chat on the bundled
SmolLM2: `chat --save` keeps one, `chat --resume` restores it after the restart (its summary
says so), `cache list|clear` show and remove them, deleting or purging the conversation removes
them, the cap and the format are checked on their own, and a cap of 0 keeps none on disk."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app import kvcache
from app.domain.history import ChatDoc
from app.engine.worker import snapshot_file as files
from app.store.history import HistoryStore

ROOT = Path(__file__).resolve().parents[2]
LONG = "Tell me about the sea. " + "Waves come and go on the shore, day after day. " * 30


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
            "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CACHE": str(tmp_path / "cache"),
            **extra}  # fmt: skip


def app(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)  # fmt: skip


CHAT = ["chat", "--model", "default", "--threads", "1", "--max-tokens", "8", "--temperature", "0"]


def test_resume_restores_the_conversation_from_disk_and_cache_owns_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    first = app([*CHAT, "--save", "--prompt", LONG], env)
    assert first.returncode == 0, first.stderr
    doc_id = re.search(r"\[saved as (chat-\w+)", first.stderr)[1]  # type: ignore[index]
    [root] = kvcache.key_folders(tmp_path / "cache" / "kv")  # this install's key's
    [kept] = kvcache.files(root, doc_id)
    assert kept.stat().st_mode & 0o777 == 0o600

    again = app([*CHAT, "--resume", "last", "--prompt", "And then?"], env)
    assert again.returncode == 0, again.stderr
    summary = re.search(r"prompt (\d+) evaluated, (\d+) reused, (\d+) restored from disk", again.stderr)
    assert summary is not None, again.stderr
    evaluated, restored = int(summary[1]), int(summary[3])
    assert restored > 150 and evaluated < 30  # the first turn came back; only the new words read
    assert f"[resumed {doc_id}" in again.stderr and f"[saved as {doc_id}" in again.stderr

    listed = app(["cache", "list"], env)
    assert listed.returncode == 0 and listed.stdout.count(doc_id) == 2, listed.stdout  # a file per turn
    assert "Tell me about the sea" in listed.stdout and "2 conversation snapshots" in listed.stdout
    cleared = app(["cache", "clear", "--conversation", doc_id], env)
    assert cleared.returncode == 0 and "Freed" in cleared.stdout
    assert kvcache.files(root, doc_id) == []
    store = HistoryStore(tmp_path / "data" / "history.db")
    try:
        assert store.load(doc_id) is not None  # the conversation stays
    finally:
        store.close()


def test_resume_restores_a_gpt_oss_conversation_past_its_window(tmp_path: Path, tiny_model: Any) -> None:
    """gpt-oss (a 128-token sliding window): the resumed prompt leaves the first answer's
    analysis out, so it continues the checkpoint kept when the first prompt had been read."""
    env = _env(tmp_path)
    chat = ["chat", "--model", str(tiny_model), "--threads", "1", "--max-tokens", "8", "--temperature", "0"]
    first = app([*chat, "--save", "--prompt", LONG], env)
    assert first.returncode == 0, first.stderr
    again = app([*chat, "--resume", "last", "--prompt", "And then?"], env)
    assert again.returncode == 0, again.stderr
    summary = re.search(r"prompt (\d+) evaluated, (\d+) reused, (\d+) restored from disk", again.stderr)
    assert summary is not None, again.stderr
    evaluated, restored = int(summary[1]), int(summary[3])
    assert restored > 300 and evaluated < 60, again.stderr  # the first prompt came back


def test_resume_names_what_it_cannot_find(tmp_path: Path) -> None:
    done = app([*CHAT, "--resume", "chat-nothing", "--prompt", "hi"], _env(tmp_path))
    assert done.returncode == 2 and "no saved conversation 'chat-nothing'" in done.stderr


def test_a_cap_of_zero_keeps_nothing_on_disk(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.json").write_text('{"kv_cache_gib": 0}')
    done = app([*CHAT, "--save", "--prompt", LONG], env)
    assert done.returncode == 0, done.stderr
    assert kvcache.key_folders(tmp_path / "cache" / "kv") == []


def _snapshot(root: Path, tag: str, n: int = 40) -> Path:
    stamp = files.Stamp("sha", 4096, "f16", False, False, "smollm2", "build")
    return files.write(root, tag, stamp, list(range(n)), b"state" * 100, bytes(range(32)))


def test_deleting_or_purging_a_conversation_removes_its_snapshots(tmp_path: Path) -> None:
    root = tmp_path / "kv"
    store = HistoryStore(tmp_path / "history.db", snapshots=root)
    try:
        a, b = ChatDoc(title="a"), ChatDoc(title="b")
        store.save(a)
        store.save(b)
        _snapshot(root, a.id)
        _snapshot(root, b.id)
        store.delete(a.id)  # to the trash: its cache goes at once
        assert {p.parent.name for p in kvcache.files(root)} == {b.id}
        store.delete(b.id)
        _snapshot(root, b.id)  # (written by a turn that ended after the delete)
        assert store.purge(older_than_days=0) == 2  # the retention rule
        assert kvcache.files(root) == []
    finally:
        store.close()


def test_the_window_sweeps_snapshots_of_conversations_gone(tmp_path: Path) -> None:
    """What the window runs off the GUI thread once it is shown (`sweep_snapshots`)."""
    from app.controllers.history_host import sweep_snapshots

    root = tmp_path / "kv"
    store = HistoryStore(tmp_path / "history.db", snapshots=root)
    kept = ChatDoc(title="kept")
    store.save(kept)
    _snapshot(root, kept.id)
    _snapshot(root, "chat-gone")
    sweep_snapshots(store)
    store.close()
    assert {p.parent.name for p in kvcache.files(root)} == {kept.id}


def test_the_cap_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    old, mid, new = (_snapshot(tmp_path, f"chat-{i}") for i in range(3))
    for age, path in ((300, old), (200, mid), (100, new)):
        os.utime(path, (path.stat().st_atime - age, path.stat().st_mtime - age))
    cut_short = old.parent / f".{old.name}.x1y2"  # a write a killed worker left
    cut_short.write_bytes(b"half")
    fresh = mid.parent / f".{mid.name}.z3w4"  # a write going on now
    fresh.write_bytes(b"half")
    os.utime(cut_short, (0, time.time() - kvcache.STALE_S - 60))
    removed = kvcache.enforce_cap(tmp_path, new.stat().st_size + mid.stat().st_size)
    assert removed == [old] and new.exists() and mid.exists()
    assert not cut_short.exists() and fresh.exists()


@pytest.mark.parametrize("tag", ["../escape", "a/b", "", "x" * 200])
def test_a_tag_that_is_not_an_id_is_never_a_folder(tmp_path: Path, tag: str) -> None:
    (tmp_path / "kv").mkdir()
    (tmp_path / "outside").mkdir()
    kvcache.forget(tmp_path / "kv", tag)
    assert (tmp_path / "outside").exists() and not kvcache.valid_tag(tag)
