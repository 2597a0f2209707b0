"""KV snapshots survive a restart and a chat switch, exactly, with real llama.cpp on real GGUF
files: on SmolLM2 and a tiny Llama 3.1, a prompt that continues a kept conversation is restored
from disk (or from memory after a switch) and its next logits equal a fresh evaluation; a
damaged, cut-short, foreign or mismatched snapshot is taken away (set aside; hostile files:
`tests/engine/test_kv_snapshots_hostile.py`) and the prompt evaluated again.

Sliding-window models (Gemma 3, the tiny gpt-oss): `tests/engine/test_kv_windowed.py`."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import kvcache
from app.domain.events import GenerationDone
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker import snapshot_file as files

KEY = bytes(range(32))  # the install's snapshot key (the app reads it from the keyring)

TOLERANCE = 1e-3  # as tests/engine/test_kv_reuse.py: a wrong state is off by 0.08 to 5.7
RESTORED = ["smollm2", "tiny llama 3.1"]


def _words(seed: int, count: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, count)]


def _model(request: pytest.FixtureRequest) -> tuple[Any, LoadSettings]:
    name = request.param
    if name == "smollm2":
        return request.getfixturevalue("smollm_model"), LoadSettings()
    if name == "tiny llama 3.1":
        from tests.tiny_models import build

        return build("llama3"), LoadSettings()
    raise AssertionError(name)


@pytest.fixture(params=RESTORED)
def model(request: pytest.FixtureRequest) -> tuple[Any, LoadSettings]:
    return _model(request)


class Worker:
    """A worker process that keeps snapshots in `folder` (a restart is a new `Worker`)."""

    def __init__(self, model: tuple[Any, LoadSettings], folder: Path) -> None:
        self.client = WorkerClient()
        self.client.load(model[0], n_ctx=2048, n_threads=1, settings=model[1],
                         snapshots=SnapshotSettings(str(folder), key=KEY))  # fmt: skip

    def __enter__(self) -> WorkerClient:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()  # the snapshot being written reaches the disk first


def fresh(client: WorkerClient, prompt: list[int]) -> np.ndarray:
    client.logits([prompt[0] + 1])  # nothing in common: the cache starts again
    reused, raw = client.logits(prompt)
    assert reused == 0
    return np.frombuffer(raw, dtype=np.float32)


def gap(a: bytes, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.frombuffer(a, dtype=np.float32) - b)))


KEEP = Keep("chat-a", "smollm2")
OLD, NEW = _words(1, 256), _words(2, 30)  # kept (past MIN_TOKENS); half a batch to read


def test_a_restart_restores_the_conversation_from_disk_exactly(model: Any, tmp_path: Path) -> None:
    with Worker(model, tmp_path) as first:
        first.evaluate(OLD, KEEP)
    [kept] = kvcache.files(kvcache.key_root(tmp_path, KEY), KEEP.conversation)
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.parent.stat().st_mode & 0o777 == 0o700
    with Worker(model, tmp_path) as second:
        done = second.evaluate(OLD + NEW, KEEP)
        assert (done.restored, done.source, done.reused) == (len(OLD), "disk", 0)
        assert gap(done.logits, fresh(second, OLD + NEW)) < TOLERANCE


def test_a_generation_says_restored_from_disk(smollm_model: Any, tmp_path: Path) -> None:
    model = (smollm_model, LoadSettings())
    with Worker(model, tmp_path) as first:
        list(first.generate(OLD, stop_ids=[], max_tokens=4, sampling=Sampling(temperature=0.0), keep=KEEP))
    [kept] = kvcache.files(kvcache.key_root(tmp_path, KEY), KEEP.conversation)
    held = int(kept.name.split("-")[1])
    assert held >= len(OLD) + 3  # the prompt and the answer's tokens the cache holds
    with Worker(model, tmp_path) as second:
        events = list(second.generate(OLD + NEW, stop_ids=[], max_tokens=2, keep=KEEP))
        done = events[-1]
        assert isinstance(done, GenerationDone)
        t = done.timings
        assert (t.prompt_restored, t.restored_from, t.prompt_reused) == (len(OLD), "disk", 0)
        assert t.prompt_evaluated == len(NEW)


def test_switching_chats_restores_from_memory(model: Any, tmp_path: Path) -> None:
    other = Keep("chat-b", KEEP.template)
    with Worker(model, tmp_path) as client:
        client.evaluate(OLD, KEEP)
        client.evaluate(_words(3, 300), other)  # chat B takes the cache
        back = client.evaluate(OLD + NEW, KEEP)
        assert (back.restored, back.source) == (len(OLD), "memory")
        assert gap(back.logits, fresh(client, OLD + NEW)) < TOLERANCE


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "state flipped":
        data[-100] ^= 0xFF
        path.write_bytes(bytes(data))
    elif how == "cut short":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "not a snapshot":
        path.write_bytes(b"GGUF" + bytes(data[4:]))
    else:  # a header rewritten: another build of llama.cpp, or another template
        start = len(files.MAGIC) + 12
        (size,) = struct.unpack("<I", data[start - 4 : start])
        header = json.loads(data[start : start + size])
        if how == "another build":
            header["build"] = "llama-cpp-python 0.0.1, state v1"
        else:
            header["fingerprint"] = files.Stamp("x", 1, "f16", False, False, "", "").fingerprint()
        raw = json.dumps(header).encode()
        data[start - 4 : start + size] = struct.pack("<I", len(raw)) + raw
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["state flipped", "cut short", "not a snapshot", "another build",
                                 "another fingerprint"])
def test_an_unusable_snapshot_is_removed_and_the_prompt_evaluated(
    smollm_model: Any, tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = (smollm_model, LoadSettings())
    with Worker(model, tmp_path) as first:
        first.evaluate(OLD, KEEP)
    [kept] = kvcache.files(kvcache.key_root(tmp_path, KEY), KEEP.conversation)
    _damage(kept, how)
    with Worker(model, tmp_path) as second:
        done = second.evaluate(OLD + NEW, KEEP)
        assert (done.restored, done.reused) == (0, 0)
        assert gap(done.logits, fresh(second, OLD + NEW)) < TOLERANCE
    assert not kept.exists()


def test_a_mismatched_template_is_not_used(smollm_model: Any, tmp_path: Path) -> None:
    model = (smollm_model, LoadSettings())
    with Worker(model, tmp_path) as first:
        first.evaluate(OLD, KEEP)
    with Worker(model, tmp_path) as second:
        done = second.evaluate(OLD + NEW, Keep(KEEP.conversation, "chatml"))
        assert done.restored == 0


@pytest.fixture
def smollm(smollm_model: Any, tmp_path: Path) -> Iterator[WorkerClient]:
    with Worker((smollm_model, LoadSettings()), tmp_path) as client:
        yield client


def test_a_regenerated_answer_restores_the_prefix_it_shares(smollm: WorkerClient, tmp_path: Path) -> None:
    """A model whose cache rolls back restores a snapshot cut back to what the prompt shares."""
    smollm.evaluate(OLD + NEW, KEEP)
    smollm.evaluate(_words(4, 50), Keep("chat-b", KEEP.template))
    again = smollm.evaluate(OLD + _words(5, 10), KEEP)
    assert (again.restored, again.source) == (len(OLD), "memory")
    assert gap(again.logits, fresh(smollm, OLD + _words(5, 10))) < TOLERANCE


def test_the_cap_removes_the_least_recently_used(smollm_model: Any, tmp_path: Path) -> None:
    model = (smollm_model, LoadSettings())
    with Worker(model, tmp_path) as client:
        for i in range(3):
            client.evaluate(_words(10 + i, 200), Keep(f"chat-{i}", KEEP.template))
    sizes = {p.parent.name: p.stat().st_size for p in kvcache.files(kvcache.key_root(tmp_path, KEY))}
    assert set(sizes) == {"chat-0", "chat-1", "chat-2"}
    cap = sizes["chat-1"] + sizes["chat-2"]
    client = WorkerClient()
    try:
        client.load(smollm_model, n_ctx=2048, n_threads=1, snapshots=SnapshotSettings(str(tmp_path), cap, key=KEY))
        client.evaluate(_words(10, 200) + NEW, Keep("chat-0", KEEP.template))  # chat-0: used now
        client.evaluate(_words(13, 200), Keep("chat-3", KEEP.template))
    finally:
        client.close()
    left = {p.parent.name for p in kvcache.files(kvcache.key_root(tmp_path, KEY))}
    assert sum(p.stat().st_size for p in kvcache.files(kvcache.key_root(tmp_path, KEY))) <= cap
    assert "chat-3" in left and "chat-1" not in left  # the oldest unused went first
