"""Image prompts: the time an image takes to be read (encoded by the projector and decoded into
the KV cache) through `harmony-desk serve`, next to llama.cpp's own `llama-server --mmproj`,
on the same model, projector, images and threads, in one run.

Usage: python bench/vision.py [--images 6] [--threads 2] [--rounds 3]

The pair: tests/tiny_vision.py's random-weight llama text model (SmolLM2's tokenizer and chat
template) and a LLaVA-style projector of a ViT-S-like shape (224×224 images in 14×14 patches:
256 image tokens; width 384, 6 blocks), so the encoding costs what a small real projector's
costs; no weights are downloaded. Each request is one chat completion (the `openai` SDK's
shape: a text part and an `image_url` data URL of a 224×224 PNG), greedy, one token: its time
is the image's read. Every image is new to both servers (no cache hit); then the first image
is sent once more, which each server should take from its cache. The servers take turns,
`--rounds` times, each round with images neither has seen; the median is printed.
Checked before printing (no figures otherwise, exit status 1): every request answered, and
every first read of an image counted at least the image's 256 tokens in its usage.
Goal: a ratio (llama-server's time over ours) ≥ 0.95 for a new image.
"""

from __future__ import annotations

import argparse
import base64
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx
import numpy as np
from PIL import Image

from bench.llama_server import Server, Unavailable, llama_server, machine_note, ours, running
from tests import tiny_vision

IMAGE_TOKENS = tiny_vision.SMALL.tokens


def data_url(seed: int) -> str:
    """A 224×224 PNG of noise, as a data: URL (the same for the same seed)."""
    side = tiny_vision.SMALL.image_size
    pixels = np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def timed(client: httpx.Client, base: str, url: str) -> tuple[float, int]:
    """(seconds, prompt tokens the server counted) of one image prompt answered with 1 token."""
    body = {
        "model": "m",
        "max_tokens": 1,
        "temperature": 0,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            }
        ],
    }
    start = time.perf_counter()
    answer = client.post(f"{base}/v1/chat/completions", json=body, timeout=600)
    took = time.perf_counter() - start
    answer.raise_for_status()
    return took, int(answer.json()["usage"]["prompt_tokens"])


def one_round(server: Server, seeds: list[int]) -> tuple[list[float], float, list[int]]:
    """(each new image's seconds, the repeat's seconds, the prompt tokens of each new image)."""
    with running(server), httpx.Client() as client:
        timed(client, server.base, data_url(10_000))  # warm-up: the first graph is built
        news, counts = [], []
        for seed in seeds:
            took, count = timed(client, server.base, data_url(seed))
            news.append(took)
            counts.append(count)
        again, _ = timed(client, server.base, data_url(seeds[0]))
    return news, again, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=6, help="new images per round and server")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    text = tiny_vision.build_text()
    projector = tiny_vision.build_projector(vit=tiny_vision.SMALL)
    print(f"machine: {machine_note()}")
    servers = {
        "ours": ours(
            text, threads=args.threads, parallel=1, ctx=2048, extra=("--projector", str(projector))
        ),
        "llama-server": llama_server(
            text, threads=args.threads, slots=1, ctx=2048, spec=("--mmproj", str(projector))
        ),
    }
    news: dict[str, list[float]] = {name: [] for name in servers}
    agains: dict[str, list[float]] = {name: [] for name in servers}
    problems = []
    for r in range(args.rounds):
        seeds = [r * 1000 + i for i in range(args.images)]
        for name, server in servers.items():
            try:
                got, again, counts = one_round(server, seeds)
            except (Unavailable, httpx.HTTPError) as exc:
                print(f"{name}: {exc}", file=sys.stderr)
                return 1
            short = [c for c in counts if c < IMAGE_TOKENS]
            if len(got) != args.images or short:
                problems.append(f"{name} round {r + 1}: {len(got)} answers, counts {counts}")
            news[name] += got
            agains[name].append(again)
    if problems:
        print("not every image was read whole:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    mine, theirs = statistics.median(news["ours"]), statistics.median(news["llama-server"])
    again_mine = statistics.median(agains["ours"])
    again_theirs = statistics.median(agains["llama-server"])
    print(
        f"image prompts: tiny llama model + ViT-S-like projector ({IMAGE_TOKENS} image tokens),"
        f" {args.threads} threads, {args.rounds} rounds × {args.images} new images per server"
    )
    print(
        f"  new image   ours {mine * 1000:7.1f} ms ({IMAGE_TOKENS / mine:6.0f} image tok/s)"
        f"   llama-server {theirs * 1000:7.1f} ms ({IMAGE_TOKENS / theirs:6.0f} image tok/s)"
        f"   ratio {theirs / mine:.2f}"
    )
    print(
        f"  same again  ours {again_mine * 1000:7.1f} ms"
        f"   llama-server {again_theirs * 1000:7.1f} ms"
        f"   ratio {again_theirs / again_mine:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
