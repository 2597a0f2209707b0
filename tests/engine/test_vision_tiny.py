"""A real multimodal path through llama.cpp's `mtmd` library (issue 41's groundwork): the tiny
random-weight LLaVA-style pair of tests/tiny_vision.py is loaded with llama-cpp-python's
low-level API, an image goes through the projector into the KV cache, and greedy tokens follow.
Each probe runs in a child process: llama.cpp may abort on a bad file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import tiny_vision

ROOT = Path(__file__).resolve().parents[2]
TEXT, IMAGE = 0, 1  # mtmd_input_chunk_type


def _probe(text: Path, mmproj: Path) -> tuple[int, dict | None, str]:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.tiny_vision", str(text), str(mmproj)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    return done.returncode, result, done.stderr[-4000:]


@pytest.fixture(scope="module")
def probed() -> dict:
    rc, result, err = _probe(tiny_vision.build_text(), tiny_vision.build_projector())
    assert rc == 0 and result is not None, err
    return result


def test_the_projector_loads_with_vision(probed: dict) -> None:
    assert probed["loaded"] and probed["vision"]
    assert probed["marker"] == "<__media__>"


def test_the_prompt_becomes_text_image_text_chunks(probed: dict) -> None:
    for run in probed["runs"]:
        assert run["tokenize_rc"] == 0
        types = [c["type"] for c in run["chunks"]]
        assert types == [TEXT, IMAGE, TEXT]
        image = run["chunks"][1]
        assert image["n_tokens"] == tiny_vision.N_IMAGE_TOKENS == 16
        assert image["n_pos"] == image["n_tokens"]  # no M-RoPE: one position a token
        assert all(c["n_tokens"] > 0 for c in run["chunks"])


def test_the_chunks_fill_the_kv_cache_and_decoding_goes_on(probed: dict) -> None:
    for run in probed["runs"]:
        assert run["eval_rc"] == 0
        assert run["n_past"] == sum(c["n_pos"] for c in run["chunks"])
        assert len(run["tokens"]) == 4
        assert run["n_past_end"] == run["n_past"] + 4
        assert np.isfinite(run["logits_head"]).all()


def test_the_image_decides_the_logits(probed: dict) -> None:
    same_a, same_b, other = probed["runs"]
    assert same_a["seed"] == same_b["seed"] != other["seed"]
    np.testing.assert_array_equal(same_a["logits_head"], same_b["logits_head"])
    assert same_a["tokens"] == same_b["tokens"]
    assert np.abs(np.subtract(same_a["logits_head"], other["logits_head"])).max() > 1e-3


def test_a_projector_for_another_model_width_is_refused() -> None:
    wrong = tiny_vision.build_projector(n_embd_text=tiny_vision.N_EMBD * 2)
    rc, result, err = _probe(tiny_vision.build_text(), wrong)
    assert rc == 0, err  # refused, not aborted: mtmd_init_from_file returns NULL
    assert result == {"loaded": False}
    assert "mismatch between text model" in err


def test_a_projector_missing_a_tensor_kills_only_the_child() -> None:
    """Pins llama.cpp 0.3.36's behaviour: a projector without `mm.0.weight` passes
    mtmd_init_from_file (warmup off) and segfaults at the first encode, so the app must load and
    use projectors only in its worker process. If llama.cpp learns to refuse it, this still holds."""
    damaged = tiny_vision.build_projector(drop=("mm.0.weight",))
    rc, result, _ = _probe(tiny_vision.build_text(), damaged)
    assert rc != 0 or result == {"loaded": False}
