"""`serve`'s default context: the model's trained context, halved until a cache for each answer
at once fits the free memory (never below 2,048), with the estimate it was chosen by; and the
real `serve` says what it chose."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.domain.library import Fit
from app.engine.local.memory import SMALLEST_CONTEXT, context_that_fits, estimate_memory
from tests.server.test_server import ROOT, _free_port


@dataclass(frozen=True)
class _Model:
    weights_bytes: int = 500 << 20
    kv_bytes_per_token: int = 100 << 10  # 100 KiB a token
    vocab_size: int = 50_000


def test_the_trained_context_when_it_fits() -> None:
    n_ctx, estimate = context_that_fits(_Model(), 32_768, sequences=1, available=64 << 30)
    assert n_ctx == 32_768 and estimate.verdict is not Fit.TOO_BIG


def test_halved_until_the_caches_of_every_answer_fit() -> None:
    free = 4 << 30  # 32k × 4 answers × 100 KiB = 12.5 GiB of cache does not fit; 8k × 4 does
    n_ctx, estimate = context_that_fits(_Model(), 32_768, sequences=4, available=free)
    assert n_ctx == 8_192 and estimate.verdict is not Fit.TOO_BIG
    bigger = estimate_memory(_Model(), n_ctx * 2, available=free, sequences=4)
    assert bigger.verdict is Fit.TOO_BIG  # the largest halving that fits


def test_never_below_the_smallest_and_unknown_contexts_are_4096() -> None:
    n_ctx, estimate = context_that_fits(_Model(), 32_768, sequences=4, available=100 << 20)
    assert n_ctx == SMALLEST_CONTEXT and estimate.verdict is Fit.TOO_BIG  # the load refuses it
    assert context_that_fits(_Model(), 0, available=64 << 30)[0] == 4096
    assert context_that_fits(_Model(), 2048, available=None)[0] == 2048  # free memory unknown


def test_serve_without_ctx_loads_the_trained_context_and_says_so(tmp_path: Path, smollm_model: Any) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")}
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--model", str(smollm_model), "--port",
                             str(_free_port()), "--threads", "1", "--parallel", "1"],
                            cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
    said = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            said.append(line)
            if line.startswith("Serving") or len(said) > 40:
                break
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()
    text = "".join(said)
    assert "Context: 8,192 tokens for each of 1 answers at once (the model's trained context" in text, text
    assert "(8192 context" in text, text
