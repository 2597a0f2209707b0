"""The delay a 3,000-token prompt adds to another client's first token, ours beside llama-server.

    python bench/hostile_delay.py

A client that sends a long prompt must not hold up the others: the server reads prompts in
chunks shared among its sequences, the shortest first (`app/engine/worker/plan.py`,
`chunk_sizes`), so a short request that comes while a long prompt is being read still gets its
first token soon. Measured on SmolLM2-135M, 2 threads, 2 sequences of `CTX` tokens each, on our
`serve` and then, the reference, on llama.cpp's own llama-server (2 slots, the same model,
threads and context per slot, `--jinja`: the GGUF's own template, as ours reads it), one at a
time. On each server: the first token of a short streamed request (about 30 tokens of prompt,
8 greedy tokens) alone, `TRIALS` times, then the same short request sent `LAG_S` after a
request of a 3,000-token prompt, `TRIALS` times. Every request's prompt is its own from its
first words (a number leads it), so neither server's prompt cache spares any of its reading.
The delay is each loaded first token less the median alone.

Checked before printing (no figures otherwise, exit status 1): every short stream ended whole
(`llama_server.problem`), every long request ended with its finish reason, at least `LONG_MIN`
prompt tokens counted and at least `LONG_MIN` of them evaluated (not taken from a cache).
Printed: one line, ours' median and worst delay, its first token alone, the goal (≤ 1 s on
2 cores, marked on the median: a trial slowed by other work on the machine moves the worst),
the load average before the run and at its end (the run's own 2 threads then count), and
llama-server's figures, with ours over its as ratios. When a delay is over the goal, ours'
request log lines (prompt tokens, of them evaluated, per request) go to stderr. Ours' delay is
about the rest of the step under way when the short request comes (256 tokens of the long
prompt) and one more step, where its prompt is read beside the long one's next chunk; other
load on the cores lengthens each step more than in proportion.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx

from app.library.bundled import default_model_path
from bench.llama_server import Server, Unavailable, llama_server, ours, problem, running, stream

THREADS = 2
SLOTS = 2
CTX = 4096  # per sequence: the long prompt, its template and its answer
TRIALS = 5
LAG_S = 0.3  # the short request is sent this long after the long one
SHORT_TOKENS = LONG_TOKENS = 8
LONG_MIN = 3000
GOAL_S = 1.0
BODY = (
    "The old lighthouse keeper wrote in his log each evening about the weather, the ships"
    " that passed, and the birds that rested on the rail. "
)
REPEATS = 108  # BODY's repeats: about 3,050 of SmolLM2's tokens with the lead and the ask


class Failed(SystemExit):
    """The run did not do what it would report."""

    def __init__(self, why: str) -> None:
        super().__init__(f"no figures: {why}")


@dataclass(frozen=True)
class Figures:
    """One server's first tokens (s): short requests alone, and each sent after a long one."""

    name: str
    alone: tuple[float, ...]
    loaded: tuple[float, ...]

    @property
    def alone_s(self) -> float:
        return statistics.median(self.alone)

    @property
    def delays(self) -> list[float]:
        return [s - self.alone_s for s in self.loaded]

    @property
    def median_s(self) -> float:
        return statistics.median(self.delays)

    @property
    def worst_s(self) -> float:
        return max(self.delays)


def short_prompt(k: int) -> str:
    return (
        f"Question {k}: in one short sentence, what is a lighthouse for, and why do ships need it?"
    )


def long_prompt(k: int) -> str:
    return (
        f"Log number {k}, kept apart from the others. {BODY * REPEATS}\nSummarise it in one line."
    )


def _short(client: httpx.Client, base: str, k: int) -> float:
    """The first token of short request `k`, after its stream was checked whole."""
    got = stream(client, base, short_prompt(k), SHORT_TOKENS)
    said = problem(got, SHORT_TOKENS)
    if said is not None:
        raise Failed(f"the short request {k}: {said}")
    return got.first - got.sent


def _long(client: httpx.Client, base: str, k: int) -> dict[str, Any]:
    """Long request `k`, not streamed, its answer checked (see the module guarantees)."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": long_prompt(k)}],
        "max_tokens": LONG_TOKENS,
        "temperature": 0,
        "seed": 1,
    }
    try:
        response = client.post(f"{base}/v1/chat/completions", json=body)
    except httpx.HTTPError as exc:
        raise Failed(f"the long request {k}: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise Failed(f"the long request {k}: HTTP {response.status_code}: {response.text[:300]}")
    answer: dict[str, Any] = response.json()
    usage = answer.get("usage") or {}
    prompt = int(usage.get("prompt_tokens", 0))
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
    evaluated = int((answer.get("timings") or {}).get("prompt_n", prompt - cached))
    if not answer["choices"][0].get("finish_reason") or min(prompt, evaluated) < LONG_MIN:
        raise Failed(
            f"the long request {k}: {prompt} prompt tokens, {evaluated} evaluated, {usage}"
        )
    return answer


def _trial(client: httpx.Client, base: str, k: int) -> float:
    """The short request's first token, sent `LAG_S` after long request `k` (both checked)."""
    failed: list[BaseException] = []

    def send_long() -> None:
        try:
            _long(client, base, k)
        except BaseException as exc:  # (raised again below, in this thread)
            failed.append(exc)

    worker = threading.Thread(target=send_long)
    sent = time.perf_counter()
    worker.start()
    time.sleep(max(0.0, sent + LAG_S - time.perf_counter()))
    first = _short(client, base, 1000 + k)
    worker.join()
    if failed:
        raise failed[0]
    return first


def measure(make: Callable[[], Server]) -> Figures:
    """The server `make` gives, started; its first tokens alone and behind long prompts."""
    try:
        server = make()
        with running(server), httpx.Client(timeout=300) as client:
            _short(client, server.base, 0)  # warm up
            alone = tuple(_short(client, server.base, k) for k in range(1, TRIALS + 1))
            loaded = tuple(_trial(client, server.base, k) for k in range(1, TRIALS + 1))
    except Unavailable as exc:
        raise Failed(str(exc)) from exc
    return Figures(server.name, alone, loaded)


def _said(f: Figures) -> str:
    return f"median {f.median_s:.2f} s, worst {f.worst_s:.2f} s (alone {f.alone_s:.2f} s)"


def _ratio(ours_s: float, theirs_s: float) -> str:
    return f"{ours_s / theirs_s:.2f}×" if theirs_s > 0.01 else "n/a"


def _log_lines(data: Path) -> str:
    log = data / "logs" / "harmony-desk.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(line for line in lines if " POST " in line)


def main() -> None:
    before = os.getloadavg()[0]
    model = default_model_path()
    with tempfile.TemporaryDirectory() as folder:
        keep = {"HARMONY_DESK_DATA": f"{folder}/data", "HARMONY_DESK_CACHE": f"{folder}/cache"}
        mine = ours(model, threads=THREADS, parallel=SLOTS, ctx=CTX)
        got = measure(lambda: replace(mine, env=keep))
        logged = _log_lines(Path(folder) / "data")
    ref = measure(
        lambda: llama_server(model, threads=THREADS, slots=SLOTS, ctx=CTX, spec=("--jinja",))
    )
    mark = "ok" if got.median_s <= GOAL_S else "OVER GOAL"
    print(
        f"delay a 3,000-token prompt adds to another client's first token: {_said(got)}, {mark}"
        f" (goal ≤ {GOAL_S:.0f} s on 2 cores; load average {before:.2f} before the run,"
        f" {os.getloadavg()[0]:.2f} at its end) | llama-server: {_said(ref)};"
        f" ours {_ratio(got.median_s, ref.median_s)} its median,"
        f" {_ratio(got.worst_s, ref.worst_s)} its worst"
    )
    if got.worst_s > GOAL_S:
        print(f"a delay over the goal; ours' request log:\n{logged}", file=sys.stderr)


if __name__ == "__main__":
    main()
