"""Hostile KV snapshots, with real llama.cpp on the bundled SmolLM2: whatever lies in a
conversation's snapshot folder — a header claiming 10^11 tokens or nested deep, a file cut
short, a FIFO named like a snapshot, another conversation's snapshot copied in, a MAC that is
wrong, a state swapped under a genuine header, another install's or an older version's file —
is never restored: the worker stays alive, the turn is answered (the prompt evaluated), the
file is set aside next to itself, and the next resume of that conversation restores from disk
as it should. From the security review: such a header killed the worker and every later resume
of that conversation failed, a FIFO hung a turn for 150 s, and a forged file holding another
conversation's state was restored (the model answered with that conversation's facts).

Below them, without a model: the file format's bounds (nothing is allocated from a length the
file cannot hold), the MAC's binding to its conversation and key, and where the key lives."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import kvcache
from app.domain.events import GenerationDone
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker import snapshot_file as files
from app.readback import ASIDE
from app.secrets import Secrets

KEY, OTHER_KEY = bytes(range(32)), bytes(range(1, 33))
TEMPLATE = "smollm2"
START = len(files.MAGIC) + 12  # where a file's JSON header starts


def _words(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, count)]


A, B, NEW, MORE = _words(1, 300), _words(7, 300), _words(2, 20), _words(3, 10)


def _worker(model: Any, folder: Path, ram_bytes: int = 2 << 30) -> WorkerClient:
    """A worker keeping snapshots in `folder` (with `ram_bytes` 0, on disk only: every restore
    comes from a file)."""
    client = WorkerClient()
    snapshots = SnapshotSettings(str(folder), ram_bytes=ram_bytes, key=KEY)
    client.load(model, n_ctx=2048, n_threads=1, snapshots=snapshots)
    return client


# --- rewriting files as an attacker without the key could ----------------------------------------


def _parts(data: bytes) -> tuple[dict[str, Any], int, int]:
    """A genuine file's header, where its ids start and where its state starts."""
    (size,) = struct.unpack("<I", data[START - 4 : START])
    header = json.loads(data[START : START + size])
    ids = START + size
    return header, ids, ids + 4 * header["n_tokens"] + files.MAC_BYTES


def _with_header(data: bytes, header: bytes) -> bytes:
    (size,) = struct.unpack("<I", data[START - 4 : START])
    return data[: START - 4] + struct.pack("<I", len(header)) + header + data[START + size :]


def _signed(data: bytes, key: bytes, tag: str) -> bytes:
    """`data` with both MACs made again under `key` for `tag` (what another install writes)."""
    _, _, state = _parts(data)
    domain = b"harmony-desk KV snapshot\0" + tag.encode() + b"\0"
    head = data[: state - files.MAC_BYTES]
    head_mac = hmac.new(key, domain + head, hashlib.sha256).digest()
    body = head + head_mac + data[state : -files.MAC_BYTES]
    return body + hmac.new(key, domain + body, hashlib.sha256).digest()


def _version_1(data: bytes) -> bytes:
    """The same snapshot as the app wrote it before files had MACs (format 1)."""
    header, ids, state = _parts(data)
    header = {**header, "tokens_sha256": "", "state_sha256": ""}
    raw = json.dumps(header).encode()
    body = data[ids : state - files.MAC_BYTES] + data[state : -files.MAC_BYTES]
    return files.MAGIC + struct.pack("<4sII", b"head", 1, len(raw)) + raw + body


CASES = ["claims 10^11 tokens", "a deeply nested header", "cut short", "a FIFO", "another conversation's, copied",
         "a wrong MAC", "a state swapped", "another install's", "an older version's"]  # fmt: skip


CONTROL = "the genuine file"  # restored: the cases differ from it only as they say


def _case(case: str, a: bytes, b: bytes) -> bytes | None:
    """The file planted for `case` (None: a FIFO), from A's and B's genuine files (`a` as this
    install writes it for the case's own conversation, unless the case says otherwise)."""
    tag = _tag(case)
    own = _signed(a, KEY, tag)  # what this install wrote for the case's conversation
    header, _, state = _parts(own)
    _, _, b_state = _parts(b)
    assert len(own) - state == len(b) - b_state  # the same length of state: a swap fits
    claims = json.dumps({**header, "n_tokens": 10**11}).encode()
    return {
        CONTROL: own,
        "claims 10^11 tokens": _with_header(own, claims),
        "a deeply nested header": _with_header(own, b"[" * 30_000 + b"]" * 30_000),
        "cut short": own[: len(own) // 2],
        "a FIFO": None,
        "another conversation's, copied": b,  # B's own file, whole and genuine, under this name
        "a wrong MAC": own[:-1] + bytes([own[-1] ^ 0xFF]),
        "a state swapped": own[:state] + b[b_state:],  # a genuine head over B's state
        "another install's": _signed(a, OTHER_KEY, tag),
        "an older version's": _version_1(own),
    }[case]


@pytest.fixture(scope="module")
def genuine(
    smollm_model: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[bytes, bytes, str]:
    """Two genuine snapshot files (conversation A's and B's) and A's file name."""
    folder = tmp_path_factory.mktemp("genuine")
    client = _worker(smollm_model, folder)
    try:
        client.evaluate(A, Keep("chat-a", TEMPLATE))
        client.evaluate(B, Keep("chat-b", TEMPLATE))
    finally:
        client.close()
    [a] = kvcache.files(kvcache.key_root(folder, KEY), "chat-a")
    [b] = kvcache.files(kvcache.key_root(folder, KEY), "chat-b")
    return a.read_bytes(), b.read_bytes(), a.name


def _tag(case: str) -> str:
    return "chat-" + "".join(c if c.isalnum() else "-" for c in case)


@pytest.fixture(scope="module")
def planted(
    genuine: tuple[bytes, bytes, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """This key's snapshot folder holding one hostile file per case, each in its conversation's
    folder (the worker is handed the folder above it)."""
    a, b, name = genuine
    root = kvcache.key_root(tmp_path_factory.mktemp("kv"), KEY)
    for case in [CONTROL, *CASES]:
        folder = root / _tag(case)
        folder.mkdir(parents=True)
        tokens = B if case == "another conversation's, copied" else A
        digest = files.token_digest(tokens)[:16]
        path = folder / f"{name.split('-')[0]}-{len(tokens)}-{digest}.kv"  # named as written
        data = _case(case, a, b)
        if data is None:
            os.mkfifo(path)
        else:
            path.write_bytes(data)
    yield root


def test_no_hostile_snapshot_is_restored_and_the_next_resume_is_fine(
    smollm_model: Any, planted: Path
) -> None:
    client = _worker(smollm_model, planted.parent, ram_bytes=0)
    pid = client.pid
    try:
        control = client.evaluate(A + NEW, Keep(_tag(CONTROL), TEMPLATE))
        assert (control.restored, control.source) == (len(A), "disk")
        for case in CASES:
            tokens = B if case == "another conversation's, copied" else A
            keep = Keep(_tag(case), TEMPLATE)
            client.logits([tokens[0] + 1])  # the live cache shares nothing with the prompt
            started = time.monotonic()
            events = list(client.generate(tokens + NEW, stop_ids=[], max_tokens=2, sampling=Sampling(temperature=0.0),
                                          keep=keep))  # fmt: skip
            done = events[-1]
            assert isinstance(done, GenerationDone), (case, done)  # the turn is answered
            timings = done.timings
            assert (timings.prompt_restored, timings.prompt_evaluated) == (0, len(tokens + NEW)), (
                case
            )
            assert time.monotonic() - started < 60, case  # nothing waited on a FIFO
            folder = planted / _tag(case)
            aside = [p for p in folder.iterdir() if ASIDE in p.name]
            assert len(aside) == 1, (case, sorted(p.name for p in folder.iterdir()))
        assert client.pid == pid  # the worker never died
    finally:
        client.close()
    again = _worker(smollm_model, planted.parent, ram_bytes=0)
    try:
        for case in CASES:  # the turn above kept its own snapshot: the next resume restores it
            tokens = B if case == "another conversation's, copied" else A
            again.logits([tokens[0] + 1])
            resumed = again.evaluate(tokens + NEW + MORE, Keep(_tag(case), TEMPLATE))
            assert resumed.source == "disk" and resumed.restored >= len(tokens + NEW), case
    finally:
        again.close()


# --- the format, without a model ------------------------------------------------------------------

STAMP = files.Stamp("sha", 4096, "f16", False, False, TEMPLATE, "build")


def _written(root: Path, tag: str = "chat-a", n: int = 40, state: bytes = b"state" * 100) -> Path:
    return files.write(root, tag, STAMP, list(range(n)), state, KEY)


def test_a_file_reads_back_only_for_its_conversation_and_key(tmp_path: Path) -> None:
    path = _written(tmp_path)
    head = files.read_head(path, STAMP, KEY, "chat-a", 1 << 30)
    assert head is not None and head.tokens == tuple(range(40))
    assert files.read_state(head, KEY) == b"state" * 100
    for key, tag in ((OTHER_KEY, "chat-a"), (KEY, "chat-b")):
        path = _written(tmp_path)
        assert files.read_head(path, STAMP, key, tag, 1 << 30) is None
        assert not path.exists()
    assert len([p for p in (tmp_path / "chat-a").iterdir() if ASIDE in p.name]) == 2
    assert kvcache.files(tmp_path) == [] and len(kvcache.aside(tmp_path)) == 2


@pytest.mark.parametrize("field,value", [("n_tokens", 10**11), ("n_tokens", (1 << 24) - 1), ("n_tokens", -1),
                                         ("state_bytes", 10**15), ("n_tokens", "40"), ("n_tokens", True)])  # fmt: skip
def test_no_length_is_trusted_before_the_file_can_hold_it(
    tmp_path: Path, field: str, value: Any
) -> None:
    import tracemalloc

    path = _written(tmp_path)
    data = path.read_bytes()
    header, _, _ = _parts(data)
    path.write_bytes(_with_header(data, json.dumps({**header, field: value}).encode()))
    tracemalloc.start()
    try:
        assert files.read_head(path, STAMP, KEY, "chat-a", 1 << 30) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing was allocated from the claim
    assert not path.exists() and kvcache.aside(tmp_path)


def test_a_file_past_the_cap_or_behind_a_link_is_never_read(tmp_path: Path) -> None:
    path = _written(tmp_path, state=b"s" * 10_000)
    assert files.read_head(path, STAMP, KEY, "chat-a", 5_000) is None and not path.exists()
    real = _written(tmp_path / "real")
    link = tmp_path / "chat-a" / real.name
    link.symlink_to(real)
    assert files.read_head(link, STAMP, KEY, "chat-a", 1 << 30) is None
    assert real.exists() and not os.path.lexists(link)  # the link set aside, never followed
    (tmp_path / "chat-b").symlink_to(tmp_path / "real" / "chat-a", target_is_directory=True)
    assert kvcache.files(tmp_path, "chat-b") == []  # a linked folder is never looked in


def test_an_authentic_file_for_another_model_is_removed_not_set_aside(tmp_path: Path) -> None:
    path = _written(tmp_path)
    other = files.Stamp("other", 4096, "f16", False, False, TEMPLATE, "build")
    assert files.read_head(path, other, KEY, "chat-a", 1 << 30) is None
    assert not path.exists() and kvcache.aside(tmp_path) == []


def test_the_cap_removes_set_aside_files_first(tmp_path: Path) -> None:
    kept = _written(tmp_path, "chat-a")
    bad = _written(tmp_path, "chat-b")
    assert files.read_head(bad, STAMP, OTHER_KEY, "chat-b", 1 << 30) is None
    [aside] = kvcache.aside(tmp_path)
    os.utime(kept, (0, 1))  # the oldest use of all: it would go first were it not for the other
    assert kvcache.enforce_cap(tmp_path, kept.stat().st_size) == [aside]
    assert kept.exists()


def test_the_model_hash_memo_is_trusted_only_under_its_mac(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF weights")
    memo = tmp_path / "models.json"
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    assert files.model_digest(str(model), memo, KEY) == digest
    saved = json.loads(memo.read_text())
    saved["entries"] = {k: "f" * 64 for k in saved["entries"]}  # another model's hash, forged
    memo.write_text(json.dumps(saved))
    assert files.model_digest(str(model), memo, KEY) == digest  # hashed again, not believed
    assert json.loads(memo.read_text())["entries"] != saved["entries"]  # and written anew
    memo.write_text("[" * 100_000)
    assert files.model_digest(str(model), memo, KEY) == digest
    assert list(tmp_path.glob("models.json" + ASIDE + "*"))  # not JSON at all: set aside


# --- the key ----------------------------------------------------------------------------------


class _Keyring:
    """A keyring that keeps what it is given (as a Secret Service would)."""

    priority = 1

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, name: str) -> str | None:
        return self.kept.get((service, name))

    def set_password(self, service: str, name: str, value: str) -> None:
        self.kept[(service, name)] = value


def test_the_key_lives_in_the_keyring_and_is_the_same_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    keyring = _Keyring()
    first = kvcache.snapshot_key(Secrets(backend=keyring))
    assert first is not None and len(first) == 32
    assert kvcache.snapshot_key(Secrets(backend=keyring)) == first
    assert list(keyring.kept) == [("harmony-desk", kvcache.KEY_NAME)]
    assert not (tmp_path / "config" / kvcache.KEY_FILE).exists()  # nothing on disk
    settings = SnapshotSettings(str(tmp_path), key=first)
    assert first.hex() not in repr(settings) and repr(first) not in repr(settings)


def test_without_a_keyring_the_key_is_a_private_file_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from keyring.backends.fail import Keyring as NoKeyring

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    first = kvcache.snapshot_key(Secrets(backend=NoKeyring()))
    path = tmp_path / "config" / kvcache.KEY_FILE
    assert first is not None and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kvcache.snapshot_key(Secrets(backend=NoKeyring())) == first
    assert caplog.text.count(str(path)) <= 1
    path.write_text("not a key")
    renewed = kvcache.snapshot_key(Secrets(backend=NoKeyring()))
    assert (
        renewed is not None
        and renewed != first
        and list(path.parent.glob(kvcache.KEY_FILE + ASIDE + "*"))
    )
    monkeypatch.setattr("app.engine.protocol.snapshot_key", lambda secrets=None: None)
    assert SnapshotSettings.of(2).folder == ""  # no key: nothing on disk
