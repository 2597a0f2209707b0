"""Two installs (two snapshot keys: two data folders, a test run beside the user's app) sharing
one cache folder never damage each other's KV snapshots, with real llama.cpp on the bundled
SmolLM2: each keeps restoring its own conversation and its own prompt cache (`prompts-local`)
from disk after the other ran in the same folder, nothing is set aside, and one's cap never
removes the other's files; the real `serve` keeps its prompt cache across restarts while a
server with another key runs in between. Files of the layout before keys had folders are moved
into their key's folder only when its MACs prove them its own; the rest are never touched.

Hostile files inside a key's own folder: `tests/engine/test_kv_snapshots_hostile.py`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import kvcache
from app.domain.history import ChatDoc
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker import snapshot_file as files
from app.engine.worker.snapshot_adopt import adopt
from app.readback import ASIDE
from app.store.history import HistoryStore

USER, SCREENSHOTS = bytes(range(32)), bytes(range(7, 39))  # two installs' snapshot keys
TEMPLATE = "smollm2"
PROMPTS = Keep(kvcache.prompt_tag(""), TEMPLATE)  # the desktop's prompt cache, in both installs
CHAT = Keep("chat-same-id", TEMPLATE)  # a conversation id both histories hold (a copied one)
STAMP = files.Stamp("sha", 4096, "f16", False, False, TEMPLATE, "build")


def _words(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, count)]


def _worker(model: Any, base: Path, key: bytes, cap: int = 2 << 30) -> WorkerClient:
    client = WorkerClient()
    snapshots = SnapshotSettings(str(base), cap, ram_bytes=0, key=key)  # every restore: a file
    client.load(model, n_ctx=2048, n_threads=1, snapshots=snapshots)
    return client


def _everything(base: Path) -> dict[Path, bytes]:
    """Every file under `base` and its bytes (links and FIFOs by name only)."""
    found = {}
    for path in sorted(base.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[path] = path.read_bytes()
        elif path.is_symlink() or path.is_fifo():
            found[path] = b""
    return found


def _aside(base: Path) -> list[Path]:
    return [p for p in base.rglob("*") if ASIDE in p.name]


# --- two installs on the real model ------------------------------------------------------------

MINE = {USER: (_words(1, 300), _words(2, 300)), SCREENSHOTS: (_words(3, 300), _words(4, 300))}
NEW = _words(5, 20)


def _turn(model: Any, base: Path, key: bytes) -> None:
    """One run of the install with `key`: its conversation and its prompt cache are restored
    from disk when it ran before, and kept again."""
    chat, prompt = MINE[key]
    client = _worker(model, base, key)
    try:
        for keep, tokens in ((CHAT, chat), (PROMPTS, prompt)):
            ran = (kvcache.key_root(base, key) / keep.conversation).exists()
            client.logits([tokens[0] + 1])  # the live cache shares nothing with the prompt
            done = client.evaluate(tokens + NEW, keep)
            if ran:  # its file holds the same prompt: all of it but its last token comes back
                assert (done.restored, done.source) == (len(tokens + NEW) - 1, "disk"), keep
    finally:
        client.close()  # the prompt cache reaches the disk


def test_two_installs_sharing_a_cache_folder_each_restore_their_own(
    smollm_model: Any, tmp_path: Path
) -> None:
    for key in (USER, SCREENSHOTS, USER, SCREENSHOTS):  # each after the other ran
        _turn(smollm_model, tmp_path, key)
    assert _aside(tmp_path) == []  # neither set aside the other's files
    folders = {p.name for p in kvcache.key_folders(tmp_path)}
    assert folders == {kvcache.key_folder(USER), kvcache.key_folder(SCREENSHOTS)}
    for key in (USER, SCREENSHOTS):
        root = kvcache.key_root(tmp_path, key)
        assert {p.parent.name for p in kvcache.files(root)} == {
            CHAT.conversation,
            PROMPTS.conversation,
        }
    assert kvcache.legacy_folders(tmp_path) == []  # nothing kept outside a key's folder


def test_a_restored_state_is_exact_after_the_other_install_ran(
    smollm_model: Any, tmp_path: Path
) -> None:
    chat, _ = MINE[USER]
    _turn(smollm_model, tmp_path, USER)
    _turn(smollm_model, tmp_path, SCREENSHOTS)
    client = _worker(smollm_model, tmp_path, USER)
    try:
        done = client.evaluate(chat + NEW + NEW, CHAT)
        assert (done.restored, done.source) == (len(chat + NEW), "disk")
        client.logits([chat[0] + 1])
        fresh = client.evaluate(chat + NEW + NEW, Keep("chat-fresh", TEMPLATE))
        assert fresh.restored == 0
        gap = np.max(
            np.abs(np.frombuffer(done.logits, np.float32) - np.frombuffer(fresh.logits, np.float32))
        )
        assert gap < 1e-3
    finally:
        client.close()


def test_one_installs_cap_never_removes_the_others_files(smollm_model: Any, tmp_path: Path) -> None:
    _turn(smollm_model, tmp_path, USER)
    users = _everything(kvcache.key_root(tmp_path, USER))
    one = max(p.stat().st_size for p in kvcache.files(kvcache.key_root(tmp_path, USER)))
    client = _worker(smollm_model, tmp_path, SCREENSHOTS, cap=one + one // 2)  # room for one file
    try:
        for i in range(3):
            client.evaluate(_words(20 + i, 300), Keep(f"chat-{i}", TEMPLATE))
    finally:
        client.close()
    theirs = kvcache.files(kvcache.key_root(tmp_path, SCREENSHOTS))
    assert len(theirs) == 1 and sum(p.stat().st_size for p in theirs) <= one + one // 2
    assert _everything(kvcache.key_root(tmp_path, USER)) == users  # every byte still there


def test_an_old_layout_file_of_this_key_is_moved_and_restored(
    smollm_model: Any, tmp_path: Path
) -> None:
    chat, _ = MINE[USER]
    _turn(smollm_model, tmp_path / "made", USER)
    [kept] = kvcache.files(kvcache.key_root(tmp_path / "made", USER), CHAT.conversation)
    base = tmp_path / "kv"
    (base / CHAT.conversation).mkdir(parents=True)
    old = kept.rename(base / CHAT.conversation / kept.name)  # where the earlier version kept it
    other = _legacy(base, "chat-other", SCREENSHOTS)  # the other install's, as it wrote it
    client = _worker(smollm_model, base, USER)
    try:
        client.logits([chat[0] + 1])
        done = client.evaluate(chat + NEW + NEW, CHAT)
        assert (done.restored, done.source) == (len(chat + NEW), "disk")
    finally:
        client.close()
    assert (
        not old.exists() and (kvcache.key_root(base, USER) / CHAT.conversation / kept.name).exists()
    )
    assert other.exists() and _aside(base) == []  # not this key's: left where it was


# --- the real server's prompt cache --------------------------------------------------------------


def test_a_servers_prompt_cache_survives_another_keys_server_in_the_same_cache(
    smollm_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.server.test_prompt_cache import _ask, _cached, _client, _first, _then
    from tests.server.test_server import _serve

    cache = tmp_path / "cache"

    def serve(install: str) -> Iterator[str]:
        monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / install / "config"))  # its key
        (tmp_path / install).mkdir(exist_ok=True)
        return _serve(str(smollm_model), tmp_path / install, cache=cache)

    mine, theirs = _first("glaciers"), _first("railways")
    for base in serve("user"):
        with _client(base) as client:
            first = _ask(client, mine)
    for base in serve("screenshots"):
        with _client(base) as client:
            _ask(client, theirs)
    for base in serve("user"):
        with _client(base) as client:
            second = _ask(client, _then(mine, first))
    assert _cached(second) >= first.usage.prompt_tokens - 1, (first.usage, second.usage)
    assert _aside(cache) == []  # neither server set aside the other's prompt cache
    for root in kvcache.key_folders(cache / "kv"):
        assert kvcache.files(root, kvcache.prompt_tag("")), root
    assert len(kvcache.key_folders(cache / "kv")) == 2


# --- the old layout and the app's side, without a model ------------------------------------------


def _legacy(base: Path, tag: str, key: bytes, n: int = 40) -> Path:
    """A snapshot as the layout before key folders kept it: right in `base`'s tag folder."""
    return files.write(base, tag, STAMP, list(range(n)), b"state" * 100, key)


def test_adopting_moves_only_what_this_keys_macs_prove_its_own(tmp_path: Path) -> None:
    base = tmp_path / "kv"
    ours = _legacy(base, "chat-a", USER)
    wrongly = _legacy(base, "chat-b", USER, 41)  # set aside by an install with another key
    wrongly = wrongly.rename(wrongly.with_name(wrongly.name + ASIDE + "20250101T000000"))
    damaged = _legacy(base, "chat-b", USER, 42)
    damaged.write_bytes(damaged.read_bytes()[:-200] + b"\0" * 200)
    copied = _legacy(base, "chat-c", USER)  # ours, but a file of that name is there already
    _legacy(kvcache.key_root(base, USER), "chat-c", USER)
    _legacy(base, "prompts-local", SCREENSHOTS)
    theirs_aside = _legacy(base, "prompts-local", SCREENSHOTS, 43)
    theirs_aside = theirs_aside.rename(theirs_aside.with_name(theirs_aside.name + ASIDE + "x"))
    os.mkfifo(base / "chat-b" / "fifo.kv")
    (base / "chat-b" / "link.kv").symlink_to(ours)
    memo = base / "models.json"
    memo.write_text('{"entries": {}, "mac": "another key\'s"}')
    untouched = {p: b for p, b in _everything(base).items() if p not in (ours, wrongly, copied)}
    root = kvcache.key_root(base, USER)

    assert adopt(base, root, USER, 1 << 30) == 2

    assert (root / "chat-a" / ours.name).exists() and not ours.exists()
    assert (root / "chat-b" / wrongly.name.partition(ASIDE)[0]).exists() and not wrongly.exists()
    assert not copied.exists() and not (base / "chat-c").exists()  # the emptied folder goes too
    assert _everything(base) == {**untouched, **_everything(root)}  # the rest: not a byte changed
    for path in kvcache.files(root):
        head = files.read_head(path, STAMP, USER, path.parent.name, 1 << 30)
        assert head is not None and files.read_state(head, USER) == b"state" * 100
    mine = _everything(root)
    theirs = kvcache.key_root(base, SCREENSHOTS)
    assert adopt(base, theirs, SCREENSHOTS, 1 << 30) == 2  # the other install takes its own
    assert {p.parent.name for p in kvcache.files(theirs)} == {"prompts-local"}
    assert _everything(root) == mine and damaged.exists()


def test_a_key_folder_is_named_by_the_key_never_with_it() -> None:
    names = {kvcache.key_folder(k) for k in (USER, SCREENSHOTS)}
    assert len(names) == 2 and all(kvcache.is_key_folder(n) for n in names)
    assert kvcache.key_folder(USER) == kvcache.key_folder(bytes(range(32)))  # the same each run
    for name in names:
        assert USER.hex()[:8] not in name and SCREENSHOTS.hex()[:8] not in name
        assert not kvcache.valid_tag(name)  # no conversation's folder is ever one


def test_the_sweep_and_a_delete_stay_in_this_installs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARMONY_DESK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))  # this install's key
    store = HistoryStore(tmp_path / "history.db")
    try:
        root = store.snapshots
        assert root is not None and root == kvcache.own_root()
        base = root.parent
        doc = ChatDoc(title="kept")
        store.save(doc)
        other = kvcache.key_root(base, SCREENSHOTS)
        theirs = [_legacy(other, t, SCREENSHOTS) for t in (doc.id, "chat-theirs")]
        _legacy(root, doc.id, USER)
        _legacy(root, "chat-gone", USER)
        kvcache.sweep(root, store.all_ids())
        kvcache.sweep(base, store.all_ids())  # even handed the shared folder by mistake
        assert {p.parent.name for p in kvcache.files(root)} == {doc.id}
        store.delete(doc.id)
        assert kvcache.files(root) == []
        assert all(p.exists() for p in theirs)
    finally:
        store.close()
