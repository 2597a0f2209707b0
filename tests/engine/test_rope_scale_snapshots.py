"""A state kept under one RoPE scaling is never restored under another, with real llama.cpp on
the bundled SmolLM2: `LoadSettings.rope_scale` reaches llama.cpp (read back as loaded, and the
same prompt's logits move with it, so reusing the other's state would be wrong), a snapshot
written on disk by a load with YaRN x2 is not restored by a load on the model's own RoPE nor the
reverse (the file made for the other is removed as stale and the prompt evaluated in full), and
the same scaling restores its own. The stamp's fingerprint without scaling is the one it had
before scaling existed, so the snapshots users already have stay valid."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import kvcache
from app.domain.placement import LoadSettings
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.engine.worker import snapshot_file as files

KEY = bytes(range(32))  # the install's snapshot key (the app reads it from the keyring)
KEEP = Keep("chat-rope", "smollm2")
N_CTX = 2048
PLAIN, YARN = LoadSettings(), LoadSettings(rope_scale=2.0)
PROMPT = [int(t) for t in np.random.default_rng(7).integers(1000, 30000, 300)]
MORE = [int(t) for t in np.random.default_rng(8).integers(1000, 30000, 20)]


class Worker:
    """A worker with SmolLM2 loaded under `settings`, keeping snapshots in `folder`."""

    def __init__(self, model: Any, settings: LoadSettings, folder: Path) -> None:
        self.client = WorkerClient()
        self.client.load(model, n_ctx=N_CTX, n_threads=1, settings=settings,
                         snapshots=SnapshotSettings(str(folder), key=KEY))  # fmt: skip

    def __enter__(self) -> WorkerClient:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()  # the snapshot being written reaches the disk first


def _files(folder: Path) -> list[Path]:
    return kvcache.files(kvcache.key_root(folder, KEY), KEEP.conversation)


def test_the_scaling_reaches_llama_cpp_and_moves_the_logits(
    smollm_model: Any, tmp_path: Path
) -> None:
    with Worker(smollm_model, PLAIN, tmp_path / "plain") as plain:
        placement = plain.info.placement if plain.info else None
        assert placement is not None
        assert (placement.rope_scale, placement.yarn_orig_ctx) == (1.0, 0)
        assert placement.rope_words() == ""
        _, own = plain.logits(PROMPT)
    with Worker(smollm_model, YARN, tmp_path / "yarn") as yarn:
        placement = yarn.info.placement if yarn.info else None
        assert placement is not None
        assert (placement.rope_scale, placement.yarn_orig_ctx) == (2.0, 8192)
        assert placement.rope_words() == "YaRN x2 of 8,192"
        _, scaled = yarn.logits(PROMPT)
    gap = np.max(np.abs(np.frombuffer(own, np.float32) - np.frombuffer(scaled, np.float32)))
    assert gap > 0.1, gap  # another RoPE, another state: reusing one for the other is wrong


@pytest.mark.parametrize(
    ("first", "then"), [(YARN, PLAIN), (PLAIN, YARN)], ids=["yarn-then-plain", "plain-then-yarn"]
)
def test_a_snapshot_is_not_restored_under_another_scaling(
    smollm_model: Any, tmp_path: Path, first: LoadSettings, then: LoadSettings
) -> None:
    with Worker(smollm_model, first, tmp_path) as writer:
        writer.evaluate(PROMPT, KEEP)
    [written] = _files(tmp_path)
    with Worker(smollm_model, then, tmp_path) as reader:
        done = reader.evaluate(PROMPT + MORE, KEEP)
        assert (done.restored, done.source, done.reused) == (0, "", 0)
        assert written not in _files(tmp_path)  # made for another RoPE: stale, removed
        reader.logits([PROMPT[0] + 1])  # nothing in common: the cache starts again
        _, fresh = reader.logits(PROMPT + MORE)
        assert done.logits == fresh  # evaluated in full, as from an empty cache


def test_the_same_scaling_restores_its_own_snapshot(smollm_model: Any, tmp_path: Path) -> None:
    with Worker(smollm_model, YARN, tmp_path) as writer:
        writer.evaluate(PROMPT, KEEP)
    with Worker(smollm_model, YARN, tmp_path) as reader:
        done = reader.evaluate(PROMPT + MORE, KEEP)
        assert (done.restored, done.source) == (len(PROMPT), "disk")


def test_the_fingerprint_says_the_scaling_and_keeps_the_old_one_without_it() -> None:
    stamp = files.Stamp("sha", N_CTX, "f16", False, False, "smollm2", "build")
    fields = dataclasses.asdict(stamp)
    before = {k: fields[k] for k in fields if k not in ("build", "projector", "rope")}
    old = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    assert stamp.fingerprint() == old
    x2 = dataclasses.replace(stamp, rope="YaRN x2 of 8,192")
    x4 = dataclasses.replace(stamp, rope="YaRN x4 of 8,192")
    assert len({stamp.fingerprint(), x2.fingerprint(), x4.fingerprint()}) == 3
