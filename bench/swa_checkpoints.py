"""A coding agent's edited first message on a sliding-window model: how much of turn 2 each server
reads again, and how long turn 2 takes.

The pattern (Qwen Code's): turn 1 is a long system prompt and a first user message; a side
request with other instructions takes the one slot; turn 2 is the same prompt with the tail of
the first user message edited (its date) and a new exchange. Run on Gemma 3 270M (window 512)
with one slot each, greedy, against:
- `ours`: `harmony-desk serve` as shipped (context checkpoints on, `SnapshotSettings.checkpoints`);
- `ours, no RAM states`: `serve --cache-ram 0`, which keeps no state in RAM and so no checkpoint
  (the kept state of turn 1 cannot be cut back past its window either: turn 2 is read whole);
- `llama-server` of the same llama.cpp (`bench/llama_server.py`; its small window cache and
  its own context checkpoints), skipped with a line saying why when it cannot be had.

Prints per server: turn-2 prompt tokens, tokens evaluated, seconds, the answer's first words;
last line: `swa checkpoints: turn-2 evaluated X of Y tokens (no checkpoints X0, llama-server X'),
seconds X.XX (no checkpoints X0.XX, llama-server X'.XX)`.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from app.library.bundled import gemma_model_path
from bench.llama_server import Server, Unavailable, llama_server, ours, running, say


@dataclass(frozen=True)
class Turn:
    prompt: int
    evaluated: int
    seconds: float
    text: str


def _first(date: str, size: int) -> list[dict[str, str]]:
    rules = " ".join(
        f"Rule {i}: read the file before you edit it, keep changes small, run test {i * 7 % 97}."
        for i in range(size)
    )
    files = " ".join(
        f"File src/mod_{i}.py defines handler_{i}, returning {i * 13 % 101}." for i in range(40)
    )
    return [
        {"role": "system", "content": f"You are a coding agent in a repository. {rules}"},
        {
            "role": "user",
            "content": f"The context for this chat. {files}\nToday is {date}.\nThe OS is linux.",
        },
    ]


def _ask(client: httpx.Client, base: str, messages: list[dict[str, str]]) -> Turn:
    body = {"model": "default", "messages": messages, "max_tokens": 12, "temperature": 0}
    started = time.monotonic()
    reply = client.post(f"{base}/v1/chat/completions", json=body, timeout=1800)
    reply.raise_for_status()
    data: dict[str, Any] = reply.json()
    usage = data.get("usage", {})
    prompt = int(usage.get("prompt_tokens", 0))
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0)
    timings = data.get("timings") or {}
    evaluated = int(timings["prompt_n"]) if "prompt_n" in timings else prompt - cached
    text = str(data["choices"][0]["message"].get("content") or "")
    return Turn(prompt, evaluated, time.monotonic() - started, text)


def _session(server: Server, size: int) -> Turn:
    """Turn 1, the side request, then turn 2 (what is measured)."""
    with running(server), httpx.Client() as client:
        first = _ask(client, server.base, _first("Monday, 4 May 2026", size))
        side = [
            {"role": "system", "content": "You decide who speaks next. " * 30},
            {"role": "user", "content": "Who speaks next?"},
        ]
        _ask(client, server.base, side)
        said = {"role": "assistant", "content": first.text or "ok"}
        second = [
            *_first("Tuesday, 5 May 2026", size),
            said,
            {"role": "user", "content": "Now list the files."},
        ]
        return _ask(client, server.base, second)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rules", type=int, default=120, help="system prompt size (120: ~4k tokens)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    args = parser.parse_args()
    model = gemma_model_path()
    common = {"threads": args.threads, "ctx": args.ctx}
    servers = {
        "ours": ours(model, parallel=1, **common),
        "ours, no RAM states": ours(model, parallel=1, extra=("--cache-ram", "0"), **common),
    }
    try:
        servers["llama-server"] = llama_server(model, slots=1, template="gemma", **common)
    except Unavailable as exc:
        say(f"llama-server left out: {exc}")
    results: dict[str, Turn] = {}
    for name, server in servers.items():
        try:
            results[name] = turn = _session(server, args.rules)
        except (Unavailable, httpx.HTTPError) as exc:
            say(f"{name} failed: {exc}")
            continue
        print(
            f"{name}: turn 2 evaluated {turn.evaluated} of {turn.prompt} tokens in "
            f"{turn.seconds:.2f} s; answer {turn.text[:40]!r}",
            flush=True,
        )
    print(_summary(results))


def _summary(results: dict[str, Turn]) -> str:
    def part(name: str, what: str) -> str:
        turn = results.get(name)
        if turn is None:
            return "n/a"
        return str(turn.evaluated) if what == "tokens" else f"{turn.seconds:.2f}"

    head = results.get("ours")
    total = head.prompt if head else 0
    return (
        f"swa checkpoints: turn-2 evaluated {part('ours', 'tokens')} of {total} tokens"
        f" (no checkpoints {part('ours, no RAM states', 'tokens')},"
        f" llama-server {part('llama-server', 'tokens')}), seconds {part('ours', 's')}"
        f" (no checkpoints {part('ours, no RAM states', 's')},"
        f" llama-server {part('llama-server', 's')})"
    )


if __name__ == "__main__":
    main()
