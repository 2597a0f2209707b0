"""Local server benchmark: tokens streamed through `harmony-desk serve` next to the same
generation in-process, measured in one run.

Usage: python bench/server.py [--model default|tiny|PATH] [--tokens 128] [--threads 1]
                              [--clients 8] [--runs 3]

Prints, for the model:
- decode tokens/s of a greedy answer streamed through the server with the `openai` SDK vs the
  same conversation, sampling, thread count and token budget generated in-process through a
  `ChatSession` on our worker (goal ≥ 0.95), the median of `--runs`; both timed the same way,
  by their consumer, from the first token of the answer or its reasoning to the end;
- time to first byte of the streamed response and to its first content token, vs the
  in-process time to the first token;
- decode tokens/s of the same answer streamed through /v1/messages (the `anthropic` SDK) vs
  /v1/chat/completions, interleaved in the same run (goal ≥ 0.97): bench/messages.py;
- `--clients` clients at once, each streaming an answer: all served, none failed, the order
  they were served in vs the order they asked (fair: first come, first served), and the wall
  time against serving them one after another;
- embeddings inputs/s through /v1/embeddings vs llama-cpp-python's `create_embedding` in-process
  on the same GGUF and inputs (goal ≥ 0.9; `--embedding-inputs 0` skips it): bench/embeddings.py.
The bundled default model is the subject: the tiny test gpt-oss writes random tokens, which the
parser can place only when a message ends, so nothing of it streams. One thing computes at a
time (never the in-process model and the server together): on 2 cores parallel load makes
llama.cpp's spin-waiting threads collapse. Checked before printing (no figures otherwise, exit
status 1): every answer, in-process and streamed, generated the same number of tokens (the
usage the server reported), and every one of the `--clients` was served, none failed.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx
import openai

from app.domain.events import ContentDelta, GenerationDone
from app.domain.messages import user_message
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.local.tokenizer import ModelTokenizer
from app.engine.request import GenerationRequest
from app.engine.turn.run import TurnRequest, run_turn
from app.templates.registry import default_template_name, get_template
from bench import embeddings
from bench import messages as anthropic_messages

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Write a long story about a lighthouse keeper and a storm."


def _model(name: str) -> str:
    if name == "tiny":
        sys.path.insert(0, str(ROOT))
        from tests.tiny_gpt_oss import build

        return str(build())
    if name == "default":
        from app.library.bundled import default_model_path

        return str(default_model_path())
    return name


def in_process(path: str, tokens: int, threads: int, runs: int) -> tuple[float, float, list[int]]:
    """(tok/s after the first token of the answer or its reasoning, ms to it), medians over
    `runs`, timed here in the app process exactly as the server's client times its stream;
    and the tokens each run generated."""
    speeds, firsts, counts = [], [], []
    with WorkerClient() as client:
        info = client.load(path, n_ctx=2048, n_threads=threads)
        template = get_template(default_template_name(info.metadata)).for_model(info.metadata)
        tokenizer = ModelTokenizer(client)
        for _ in range(runs):
            session = ChatSession(
                client,
                template,
                sampling=Sampling(temperature=0.0),
                max_tokens=tokens,
                tokenizer=tokenizer,
            )
            asked = TurnRequest(GenerationRequest(), message=user_message(QUESTION))
            began, first, count = time.perf_counter(), 0.0, 0
            for event in run_turn(session, asked):
                if isinstance(event, ContentDelta) and not first:  # answer or reasoning
                    first = time.perf_counter()
                if isinstance(event, GenerationDone):
                    count = event.timings.generated
            end = time.perf_counter()
            counts.append(count)
            if first and count > 1:  # an answer decided only at its end streams nothing
                speeds.append((count - 1) / (end - first))
                firsts.append((first - began) * 1000)
    if not speeds:
        return 0.0, 0.0, counts
    return statistics.median(speeds), statistics.median(firsts), counts


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _streamed(api: openai.OpenAI, tokens: int) -> tuple[float, float, float, float, int]:
    """(tok/s after the first token, ms to the first byte, ms to the first content, s in all,
    tokens generated as the server's usage says)."""
    began = time.perf_counter()
    first_byte = first = 0.0
    count = 0
    stream = api.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=tokens,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        now = time.perf_counter()
        first_byte = first_byte or now
        delta = chunk.choices[0].delta if chunk.choices else None
        said = delta is not None and (
            delta.content or (delta.model_extra or {}).get("reasoning_content")
        )
        if said and not first:
            first = now
        if chunk.usage is not None:
            count = chunk.usage.completion_tokens
    end = time.perf_counter()
    speed = (count - 1) / (end - first) if first and count > 1 else 0.0
    return speed, (first_byte - began) * 1000, (first - began) * 1000, end - began, count


def through_server(
    path: str, tokens: int, threads: int, runs: int, clients: int
) -> dict[str, object]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--model",
            path,
            "--port",
            str(port),
            "--threads",
            str(threads),
            "--ctx",
            "2048",
            "--max-tokens",
            str(max(tokens, 256)),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        api = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=600)
        _streamed(api, 8)  # warm: the vocabulary crosses the pipe once
        measured = [_streamed(api, tokens) for _ in range(runs)]
        one = statistics.median(m[3] for m in measured)
        versus = anthropic_messages.compare(  # /v1/messages vs chat (bench/messages.py)
            base, QUESTION, tokens, runs, lambda: _streamed(api, tokens)
        )
        order: list[int] = []
        failures: list[str] = []
        began = time.perf_counter()

        def client(i: int) -> None:
            try:
                _streamed(api, tokens)
                order.append(i)
            except Exception as exc:  # counted, not raised: the bench reports it
                failures.append(f"{i}: {exc}")

        threads_ = []
        for i in range(clients):
            t = threading.Thread(target=client, args=(i,))
            t.start()
            threads_.append(t)
            time.sleep(0.05)  # they ask in this order
        for t in threads_:
            t.join()
        wall = time.perf_counter() - began
        return {
            "speed": statistics.median(m[0] for m in measured),
            "first_byte": statistics.median(m[1] for m in measured),
            "first_token": statistics.median(m[2] for m in measured),
            "order": order,
            "failures": failures,
            "wall": wall,
            "one": one,
            "counts": [m[4] for m in measured],
            "messages": versus,
        }
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    embeddings.add_arguments(parser)
    args = parser.parse_args()
    path = _model(args.model)
    print(
        f"model {path}; {args.tokens} tokens, {args.threads} thread(s), greedy,"
        f" median of {args.runs}"
    )
    speed, first, counts = in_process(path, args.tokens, args.threads, args.runs)
    served = through_server(path, args.tokens, args.threads, args.runs, args.clients)
    streamed = cast(list[int], served["counts"])
    failures = cast(list[str], served["failures"])
    order = cast(list[int], served["order"])
    if len({*counts, *streamed}) != 1 or not counts[0]:
        print(f"no figures: tokens generated in-process {counts}, streamed {streamed}")
        return 1
    if len(order) != args.clients or failures:
        print(f"no figures: {len(order)} of {args.clients} clients served:")
        for failure in failures:
            print(f"  failed: {failure}")
        return 1
    print(f"each answer: {counts[0]} tokens generated, in-process and streamed alike")
    print("| measure | through the server | in-process | ratio |")
    print("|---|---|---|---|")
    s = float(served["speed"])  # type: ignore[arg-type]
    if not (s and speed):
        print("| decode tok/s | n/a: the answer came whole at its end (nothing streamed) | | |")
        return 1
    print(f"| decode tok/s (streamed, openai SDK) | {s:.1f} | {speed:.1f} | {s / speed:.2f} |")
    print(f"| ms to the first byte | {served['first_byte']:.0f} | — | — |")
    f = float(served["first_token"])  # type: ignore[arg-type]
    print(f"| ms to the first content token | {f:.0f} | {first:.0f} | {f / first:.2f} |")
    fair = order == sorted(order)
    wall, one = float(served["wall"]), float(served["one"])  # type: ignore[arg-type]
    print(
        f"| {args.clients} clients at once | {len(order)} served, {len(failures)} failed,"
        f" order {order} ({'first come, first served' if fair else 'NOT in arrival order'}) |"
        f" {wall:.1f} s vs {args.clients} × {one:.1f} s one after another |"
        f" {wall / (args.clients * one):.2f} |"
    )
    if not anthropic_messages.report(
        cast(anthropic_messages.Compared, served["messages"]), args.tokens
    ):
        return 1
    if args.embedding_inputs:  # /v1/embeddings vs create_embedding (bench/embeddings.py)
        return embeddings.report(
            args.embedding_model,
            args.embedding_inputs,
            args.embedding_batch,
            args.threads,
            args.runs,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
