"""Speculative decoding, measured: one client's decode tokens/s through the app's server with
lookup drafting against without, beside llama-server's n-gram drafting against its none, on
prompts that repeat their input and prompts that do not, all in one run.

Usage: python bench/speculative.py [--threads 2] [--models smollm2,gemma] [--tokens 256]
                                   [--repeat 2] [--quick]

For each model, four servers side by side (started together, one computing at a time):
`python -m app serve --speculative off` and `--speculative lookup`, llama-server without
drafting and with `--spec-type ngram-simple` (its defaults otherwise; `bench/llama_server.py`
builds it from the llama.cpp llama-cpp-python vendors when missing), the same threads and
context. Prompts: rewrite (~40 lines of Python returned whole with one variable renamed),
copy (a paragraph to repeat word for word), prose (a short story), and two ordinary chat
questions of the kind SmolLM2 was tuned on. Each: one client, greedy, `max_tokens` =
`--tokens`, decode tok/s as the client sees the tokens come after the first (the usage's token
count), the best of `--repeat`. Drafted / accepted tokens are printed where a response carries
them (llama-server's `timings`; ours when its server adds them). Ours' answers with and
without lookup are compared: the same text → identical "yes"; answers that part where plain
decoding's two likeliest tokens were within 0.5 of a logit (the server without lookup asked
again with logprobs, and the timed answers judged on its scores: `judge_tie`)
→ "near-tie"; otherwise "no". `--quick` checks the plumbing: 16 tokens, SmolLM2, once.
Checked before printing (no figures otherwise, exit status 1): every stream ended with its
finish reason, its usage and [DONE], and its tokens, counted, fit its budget and its chunks.
On stderr: what else was running (the load average) before the first server started.
The last line: `speculative: code X.XX×, prose X.XX×, identical yes|near-tie|no`: code is the
best of ours' lookup / off on the rewrite and copy prompts, for the main model (Gemma 3 270M
when measured, else SmolLM2); prose the worst over every prompt and model.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx

import bench.llama_server as serving
from app.library.bundled import default_model_path, gemma_model_path
from bench.llama_server import (
    Streamed,
    Unavailable,
    llama_server,
    machine_note,
    ours,
    problem,
    running,
    say,
    stream,
)

CODE = """import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Item:
    name: str
    price: float
    count: int = 1


@dataclass
class Inventory:
    items: list[Item] = field(default_factory=list)

    def add(self, name: str, price: float, count: int = 1) -> None:
        for item in self.items:
            if item.name == name:
                item.count += count
                return
        self.items.append(Item(name, price, count))

    def remove(self, name: str) -> bool:
        for i, item in enumerate(self.items):
            if item.name == name:
                del self.items[i]
                return True
        return False

    def total(self) -> float:
        amount = 0.0
        for item in self.items:
            amount += item.price * item.count
        return amount

    def save(self, path: Path) -> None:
        rows = [{"name": i.name, "price": i.price, "count": i.count} for i in self.items]
        path.write_text(json.dumps(rows, indent=2))
"""
PARAGRAPH = (
    "The harbour was quiet in the early morning. Fishing boats rocked gently against the pier,"
    " their ropes creaking in the cold wind. An old man sat on a wooden crate, mending a net"
    " with slow and careful hands. Gulls circled overhead, waiting for the first catch of the"
    " day. Somewhere behind the warehouses a bell rang six times, and the baker opened his"
    " shutters to let the smell of fresh bread drift down to the water."
)
PROMPTS = {
    "rewrite": "Rename the variable `amount` to `subtotal` in this code and return the whole code,"
    f" changed only there:\n\n```python\n{CODE}```",
    "copy": f"Repeat the following text exactly, word for word:\n\n{PARAGRAPH}",
    "prose": "Write a short story about a lighthouse keeper who finds a message.",
    "chat-1": "What are some healthy breakfast ideas?",
    "chat-2": "How do I make a good cup of tea?",
}
REPEATS_INPUT = ("rewrite", "copy")  # the prompts whose answer repeats the prompt
NGRAM = ("--spec-type", "ngram-simple")
PROMPT_ROOM = 1024  # context besides the answer: the template and the longest prompt
TEMPLATES = {"gemma": "gemma"}  # llama-server's for a GGUF without one (as the app's choice)


class Failed(Exception):
    """The run did not do what it reports."""


@dataclass
class Best:
    """One server's answers to one prompt: the fastest, and every text it gave."""

    rate: float = 0.0
    streamed: Streamed | None = None
    texts: list[str] = field(default_factory=list)

    def take(self, got: Streamed) -> None:
        self.texts.append(got.text)
        if got.decode_rate > self.rate:
            self.rate, self.streamed = got.decode_rate, got


def one_token(got: Streamed) -> str | None:
    return "is one token: no decode rate" if got.tokens < 2 else None


NEAR_TIE = 0.5  # logits (as tests/engine/test_parallel.py): closer top two may swap in a batch
_TIES: dict[tuple[str, str], bool] = {}  # (off, lookup) answers → parted at a near-tie


def near_tie(off: str, lookup: str) -> bool:
    """Whether two different greedy answers part only where the model's two likeliest tokens
    were within `NEAR_TIE` of each other (judged by `judge_tie` while the servers ran)."""
    return _TIES.get((off, lookup), False)


def scored(client: httpx.Client, base: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    """One whole greedy answer with each token's two likeliest (the logprobs)."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 1,
        "logprobs": True,
        "top_logprobs": 2,
    }
    answer = client.post(f"{base}/v1/chat/completions", json=body, headers={"Connection": "close"})
    answer.raise_for_status()
    choice: dict[str, Any] = answer.json()["choices"][0]
    return choice


def judge_tie(
    client: httpx.Client, base: str, off: str, lookup: str, prompt: str, tokens: int
) -> bool:
    """Ask the server without lookup again, with log-probabilities: where the two timed answers
    part, one must go on with the likeliest token and the other with the second likeliest,
    within `NEAR_TIE` of each other. The answers judged are the ones the bench timed (a
    re-asked pair may part elsewhere: the cache a question meets changes the rounding); the
    scores are trusted only where the re-asked answer is the timed one up to that token (it
    may itself take the other token there: the same near-tie)."""
    at = next((i for i, (a, b) in enumerate(zip(off, lookup, strict=False)) if a != b), None)
    if at is None:
        return False  # one is the other's beginning: parted at an end, not at a token
    steps, said = scored(client, base, prompt, tokens)["logprobs"]["content"], ""
    for step in steps:
        piece = step["token"]
        if len(said) + len(piece) <= at:
            said += piece
            continue
        if not off.startswith(said):
            say(f"  asked again without lookup, the answer parts from the timed one before {at}")
            return False
        top, n = step["top_logprobs"], len(said)
        if len(top) < 2:
            return False
        (first, best), (second, next_best) = ((t["token"], t["logprob"]) for t in top[:2])
        margin = best - next_best
        say(
            f"  off and lookup part at {off[n : n + 12]!r} / {lookup[n : n + 12]!r}, the plain"
            f" scores' two likeliest {first!r} and {second!r}, margin {margin:.3f}"
        )
        swapped = (off.startswith(first, n) and lookup.startswith(second, n)) or (
            off.startswith(second, n) and lookup.startswith(first, n)
        )
        return swapped and margin < NEAR_TIE
    return False


def identical(pairs: list[tuple[str, str]]) -> str:
    """The verdict on ours' answers (off, lookup): yes, near-tie or no."""
    differing = [(a, b) for a, b in pairs if a != b]
    if not differing:
        return "yes"
    return "near-tie" if all(near_tie(a, b) for a, b in differing) else "no"


def parted(off: str, lookup: str) -> str:
    """Where two answers part: the character, and a little of each from there."""
    at = next((i for i, (a, b) in enumerate(zip(off, lookup, strict=False)) if a != b), None)
    at = min(len(off), len(lookup)) if at is None else at
    return f"from character {at}: off {off[at : at + 40]!r}, lookup {lookup[at : at + 40]!r}"


def drafts(got: Streamed | None) -> str:
    """`drafted/accepted` where the response said (ours' or llama-server's names), else —."""
    t = got.timings if got is not None else {}
    drafted, accepted = t.get("drafted", t.get("draft_n")), t.get("accepted")
    accepted = t.get("draft_n_accepted") if accepted is None else accepted
    return f"{drafted}/{accepted}" if drafted is not None else "—"


def model_path(name: str) -> Path:
    paths = {"smollm2": default_model_path, "gemma": gemma_model_path}
    if name not in paths:
        raise Failed(f"unknown model {name!r}; expected some of {', '.join(paths)}")
    return Path(paths[name]())


def measure(model: str, args: argparse.Namespace) -> dict[tuple[str, str], Best]:
    """(server, prompt) -> its best answer, for `model`."""
    path, ctx, t = model_path(model), args.tokens + PROMPT_ROOM, args.threads
    fa = args.flash_attn
    servers = {
        "ours-off": ours(path, threads=t, parallel=1, ctx=ctx, speculative="off", flash_attn=fa),
        "ours-lookup": ours(
            path, threads=t, parallel=1, ctx=ctx, speculative="lookup", flash_attn=fa
        ),
        "llama-server": llama_server(
            path,
            threads=t,
            slots=1,
            ctx=ctx,
            template=TEMPLATES.get(model),
            flash_attn=args.flash_attn,
        ),
        "llama-ngram": llama_server(
            path,
            threads=t,
            slots=1,
            ctx=ctx,
            spec=NGRAM,
            template=TEMPLATES.get(model),
            flash_attn=args.flash_attn,
        ),
    }
    best = {(s, p): Best() for s in servers for p in PROMPTS}
    with ExitStack() as stack, httpx.Client(timeout=900) as client:
        for name, server in servers.items():
            stack.enter_context(running(server))
            stream(client, server.base, "Hello", 4)  # warm: what loads lazily, loaded
            say(f"{model}, {t} thread(s): {name} ready")
        for _ in range(args.repeat):  # the servers in turn on each prompt: drifts hit them alike
            for prompt, text in PROMPTS.items():
                for name, server in servers.items():
                    got = stream(client, server.base, text, args.tokens)
                    said = problem(got, args.tokens) or one_token(got)
                    if said is not None:
                        raise Failed(f"{model}, {name}, {prompt}: the answer {said}")
                    best[name, prompt].take(got)
                    say(f"  {model} {name} {prompt}, {t} thread(s): {got.decode_rate:.1f} tok/s")
        for prompt, text in PROMPTS.items():
            offs, ons = best["ours-off", prompt].texts, best["ours-lookup", prompt].texts
            pairs = zip(offs, ons, strict=True)
            for pair in {(a, b) for a, b in pairs if a != b}:
                base = servers["ours-off"].base
                _TIES[pair] = judge_tie(client, base, *pair, text, args.tokens)
    return best


def ratio(best: dict[tuple[str, str], Best], prompt: str, on: str, off: str) -> float:
    return best[on, prompt].rate / best[off, prompt].rate


def table(results: dict[str, dict[tuple[str, str], Best]], args: argparse.Namespace) -> None:
    print(
        f"{args.threads} thread(s), flash attention {'on' if args.flash_attn else 'off'}, one"
        f" client, greedy, at most {args.tokens} tokens; decode"
        f" tok/s after the first token, best of {args.repeat}; drafted/accepted where reported"
    )
    print(
        "| model | prompt | tokens off/lookup | ours off | ours lookup | × | drafted/accepted"
        " | llama-server | ngram-simple | × | drafted/accepted | same text |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, best in results.items():
        for prompt in PROMPTS:
            off, on = best["ours-off", prompt], best["ours-lookup", prompt]
            lo, ln = best["llama-server", prompt], best["llama-ngram", prompt]
            counted = "/".join(str(b.streamed.tokens) if b.streamed else "?" for b in (off, on))
            same = identical(list(zip(off.texts, on.texts, strict=True)))
            print(
                f"| {model} | {prompt} | {counted} | {off.rate:.1f} | {on.rate:.1f}"
                f" | {on.rate / off.rate:.2f} | {drafts(on.streamed)} | {lo.rate:.1f}"
                f" | {ln.rate:.1f} | {ln.rate / lo.rate:.2f} | {drafts(ln.streamed)} | {same} |"
            )


def last_line(results: dict[str, dict[tuple[str, str], Best]]) -> str:
    """`speculative: code X.XX×, prose X.XX×, identical yes|near-tie|no` (module docstring)."""
    main = "gemma" if "gemma" in results else next(iter(results))
    code = max(ratio(results[main], p, "ours-lookup", "ours-off") for p in REPEATS_INPUT)
    prose = min(
        ratio(best, p, "ours-lookup", "ours-off") for best in results.values() for p in PROMPTS
    )
    pairs = [
        pair
        for best in results.values()
        for p in PROMPTS
        for pair in zip(best["ours-off", p].texts, best["ours-lookup", p].texts, strict=True)
    ]
    return f"speculative: code {code:.2f}×, prose {prose:.2f}×, identical {identical(pairs)}"


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--models", help="default smollm2,gemma (--quick: smollm2)")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=2, help="measurements of each; the best")
    serving.add_flash_attn(parser)
    parser.add_argument("--quick", action="store_true", help="16 tokens, measured once")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.repeat = 16, 1
    args.models = (args.models or ("smollm2" if args.quick else "smollm2,gemma")).split(",")
    return args


def main() -> int:
    args = options()
    say(f"before the bench: {machine_note()}")
    results = {}
    try:
        for model in args.models:
            results[model] = measure(model, args)
    except (Failed, Unavailable) as exc:
        say(f"no figures: {exc}")
        return 1
    for model, best in results.items():
        for p in PROMPTS:
            for off, on in zip(
                best["ours-off", p].texts, best["ours-lookup", p].texts, strict=True
            ):
                if off != on:
                    say(f"ours' {model} answers to {p} differ with lookup {parted(off, on)}")
    table(results, args)
    print(last_line(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
