"""KV snapshots, measured: reopening a conversation after a restart and switching chats, restored
against evaluated, in one run, per model.

Usage: python bench/kv_persist.py [--threads 1] [--tokens 3000] [--models smollm2,gemma,gpt-oss]

For each model, through the app's own worker (`WorkerClient`) with snapshots in a temporary
folder and a conversation of `--tokens` tokens (random ids of the model's vocabulary):
- reopen: the conversation answered in one worker, the worker closed (a restart), then in a new
  worker the next turn's time to first token, restored from disk, beside the same prompt
  evaluated in full by the same worker (the reference, measured in the same run);
- switch: chat A answered, chat B answered, back to A: A's next turn's time to first token
  beside the full evaluation;
- bytes on disk per 1,000 tokens, and how long after the answer ended its snapshot was on disk;
- off the answer's path: the next turn's time to first token right after an answer, with
  snapshots kept and with none (best of `--repeat`), as a ratio (goal ≥ 0.97);
- exact: the restored prompt's next logits against a fresh evaluation of the same prompt in the
  same pieces (the conversation read from nothing, then the new turn: llama.cpp's CPU kernels
  round by a batch's rows), max |Δ| < 1e-3.
The models: SmolLM2 (whole attention), Gemma 3 270M (a 512-token sliding window) and the tiny
gpt-oss the tests build (a 128-token window, real gpt-oss architecture); the sliding-window
models keep their states with the full-size window cache, laid back exactly
(`app/engine/worker/state_layout.py`). The rows print best first: the worst model prints last.
Checked before printing (no figures otherwise, exit status 1): every timed turn evaluated or
restored the whole prompt it reports, and a restored turn restored the conversation.
The last line: `kv persist: reopen X.XX×, switch X.XX×, exact yes|no` (the worst model).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import kvcache
from app.domain.events import GenerationDone
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.library.bundled import default_model_path, gemma_model_path

EXACT = 1e-3
GREEDY = Sampling(temperature=0.0)


class Failed(Exception):
    """The run did not do what it reports."""


def ids(seed: int, n: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, n)]


def turn(client: WorkerClient, prompt: list[int], keep: Keep | None) -> Any:
    """One turn of one token; its timings, checked to cover the whole prompt."""
    last = list(client.generate(prompt, stop_ids=[], max_tokens=1, sampling=GREEDY, keep=keep))[-1]
    if not isinstance(last, GenerationDone):
        raise Failed(f"a turn failed: {last}")
    t = last.timings
    if t.prompt_evaluated + t.prompt_reused + t.prompt_restored != len(prompt) or t.generated != 1:
        raise Failed(f"a turn covered {t} of a {len(prompt)}-token prompt")
    return t


def cold(client: WorkerClient, prompt: list[int]) -> Any:
    """The prompt evaluated in full (the live cache emptied first, no snapshot looked for)."""
    client.logits([prompt[0] + 1])
    t = turn(client, prompt, None)
    if t.prompt_evaluated != len(prompt):
        raise Failed(f"the reference reused {t.prompt_reused} tokens")
    return t


def measure(name: str, path: Path, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    old, new = ids(1, args.tokens), ids(2, 20)
    settings = SnapshotSettings(str(folder))
    keep_a, keep_b = Keep(f"{name}-a", "bench"), Keep(f"{name}-b", "bench")

    def worker() -> WorkerClient:
        client = WorkerClient()
        client.load(path, n_ctx=args.tokens + 512, n_threads=args.threads, snapshots=settings)
        return client

    row: dict[str, Any] = {"model": name}
    with worker() as first:
        row["window"] = (
            first.info.placement.sliding_window if first.info and first.info.placement else 0
        )
        turn(first, old, keep_a)
        ended = time.perf_counter()
        while time.perf_counter() - ended < 60:
            if kvcache.files(folder, keep_a.conversation):
                break
            time.sleep(0.005)
        row["saved_ms"] = (time.perf_counter() - ended) * 1000
    kept = kvcache.files(folder, keep_a.conversation)
    if not kept:
        raise Failed("no snapshot was written")
    row["snapshots"] = bool(kept)
    row["bytes_per_1000"] = kept[0].stat().st_size * 1000 / args.tokens if kept else 0
    with worker() as second:
        reopened = turn(second, old + new, keep_a)
        reference = cold(second, old + new)
        if row["snapshots"] and reopened.prompt_restored != args.tokens:
            raise Failed(f"reopening restored {reopened.prompt_restored} of {args.tokens} tokens")
        row["reopen"] = reopened.first_token_ms / reference.first_token_ms
        row["reopen_ms"], row["full_ms"] = reopened.first_token_ms, reference.first_token_ms
        turn(second, ids(3, 300), keep_b)  # chat A was answered just now; then chat B,
        back = turn(second, old + new + ids(4, 20), keep_a)  # and back to A
        if row["snapshots"] and back.restored_from != "memory":
            raise Failed(
                f"going back to A restored {back.prompt_restored} from {back.restored_from!r}"
            )
        row["switch"], row["switch_ms"] = (
            back.first_token_ms / reference.first_token_ms,
            back.first_token_ms,
        )
        row["path"] = path_ratio(second, old, new, args.repeat)
    with worker() as third:
        done = third.evaluate(old + new, keep_a)
        third.logits([old[0] + 1])
        third.logits(old)
        reused, fresh = third.logits(old + new)
        if reused != len(old):
            raise Failed(f"the fresh evaluation reused {reused} of {len(old)} tokens")
        gap = np.abs(
            np.frombuffer(done.logits, np.float32) - np.frombuffer(fresh, np.float32)
        ).max()
        if row["snapshots"] and done.restored < args.tokens:
            raise Failed(f"the exactness check restored {done.restored} of {args.tokens} tokens")
        row["exact"], row["gap"] = bool(gap < EXACT), float(gap)
    return row


def path_ratio(client: WorkerClient, old: list[int], new: list[int], repeat: int) -> float:
    """The next turn's time to first token right after an answer: without snapshots / with
    (each turn's new words its own, so no state kept before holds them: the live cache does)."""
    best: dict[bool, float] = {}
    for i in range(repeat):
        for on in (True, False):
            keep = Keep(f"path-{i}", "bench") if on else None  # a new conversation each time
            client.logits([old[0] + 1])
            turn(client, old, keep)
            t = turn(client, old + ids(50 + 2 * i + on, len(new)), keep)
            if t.prompt_reused < len(old) - 1:
                raise Failed(f"the next turn did not continue the cache: {t}")
            best[on] = min(best.get(on, float("inf")), t.first_token_ms)
    return best[False] / best[True]


def saved(row: dict[str, Any]) -> str:
    return f"on disk {row['saved_ms']:.0f} ms after the answer" if row["snapshots"] else "none kept"


def tiny_gpt_oss() -> Path:
    """The tiny random-weight gpt-oss GGUF the tests build (cached)."""
    from tests.tiny_gpt_oss import build

    return Path(build())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default="smollm2,gemma,gpt-oss")
    args = parser.parse_args()
    paths = {"smollm2": default_model_path, "gemma": gemma_model_path, "gpt-oss": tiny_gpt_oss}
    rows = []
    try:
        for name in args.models.split(","):
            with tempfile.TemporaryDirectory() as folder:
                rows.append(measure(name, Path(paths[name]()), args, Path(folder)))
    except Failed as exc:
        print(f"no figures: {exc}")
        return 1
    print(f"{args.tokens}-token conversation, {args.threads} thread(s); ratios: ours / evaluated")
    rows.sort(key=lambda r: (max(r["reopen"], r["switch"]), not r["exact"]))
    for r in rows:
        said = f"sliding window {r['window']}" if r["window"] else "whole attention"
        print(
            f"{r['model']:8} {said}: reopen {r['reopen_ms']:.0f} ms vs {r['full_ms']:.0f} ms"
            f" ({r['reopen']:.3f}×), switch {r['switch_ms']:.0f} ms ({r['switch']:.3f}×),"
            f" {r['bytes_per_1000'] / 1e6:.1f} MB per 1,000 tokens, {saved(r)}, next turn"
            " without/with saving"
            f" {r['path']:.3f} (goal ≥ 0.97), exact {'yes' if r['exact'] else 'no'}"
            f" (max |Δlogit| {r['gap']:.2g})"
        )
    print(
        f"kv persist: reopen {max(r['reopen'] for r in rows):.2f}×,"
        f" switch {max(r['switch'] for r in rows):.2f}×,"
        f" exact {'yes' if all(r['exact'] for r in rows) else 'no'}"
        f" (goals ≤ 0.05×, ≤ 0.05×, yes; worst: {rows[-1]['model']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
