"""Render and parse throughput of our Harmony codec next to openai-harmony, in one run.

Usage: python bench/harmony_codec.py [--rounds N]
Prints tokens/s for each side and the ratio ours/reference (goal: >= 0.5 for both).
Single process, single thread; the reference is the openai-harmony wheel (Rust).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Callable

from app.domain.messages import Conversation, DeveloperContent, Message, Role, SystemContent
from app.harmony.encoding import load_encoding
from app.harmony.parser import StreamParser, parse_tokens
from app.harmony.renderer import Renderer
from app.resources import resources_dir

os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(resources_dir()))

WORDS = (  # noqa: SIM905
    "the model answers questions about weather, code, history and maths; naïve café 日本語 💖"
    ' {"json": [1, 2, 3]} def f(x): return x * 2\n'
).split(" ")


def corpus(n: int, seed: int = 7) -> list[Conversation]:
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    convs = []
    for _ in range(n):
        msgs = [
            Message.of(Role.SYSTEM, SystemContent(conversation_start_date="2026-11-22")),
            Message.of(Role.DEVELOPER, DeveloperContent(instructions=text(30))),
        ]
        for _ in range(rng.randint(1, 6)):
            msgs.append(Message.of(Role.USER, text(rng.randint(5, 80))))
            msgs.append(Message.of(Role.ASSISTANT, text(rng.randint(20, 200)), channel="analysis"))
            msgs.append(Message.of(Role.ASSISTANT, text(rng.randint(20, 200)), channel="final"))
        convs.append(Conversation(messages=tuple(msgs)))
    return convs


def completions(renderer: Renderer, convs: list[Conversation]) -> list[list[int]]:
    out = []
    for conv in convs:
        tokens: list[int] = []
        for m in conv.messages[-2:]:
            tokens.extend(renderer.render_message(m))
        tokens = tokens[2:]
        tokens[-1] = 200002
        out.append(tokens)
    return out


def best_rate(fn: Callable[[], int], rounds: int) -> float:
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        count = fn()
        best = max(best, count / (time.perf_counter() - start))
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--conversations", type=int, default=200)
    args = ap.parse_args()

    import openai_harmony as oh

    ref = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    renderer = Renderer(load_encoding())
    convs = corpus(args.conversations)
    ref_convs = [oh.Conversation.from_json(json.dumps(c.to_dict())) for c in convs]
    comps = completions(renderer, convs)
    assert all(
        renderer.render(c) == ref.render_conversation_for_completion(r, oh.Role.ASSISTANT)
        for c, r in zip(convs, ref_convs, strict=True)
    )

    def ours_render() -> int:
        return sum(len(renderer.render(c)) for c in convs)

    def ref_render() -> int:
        return sum(
            len(ref.render_conversation_for_completion(c, oh.Role.ASSISTANT)) for c in ref_convs
        )

    def ours_parse() -> int:
        for t in comps:
            parse_tokens(t, encoding=renderer.encoding)
        return sum(map(len, comps))

    def ours_parse_strict() -> int:
        for t in comps:
            parse_tokens(t, encoding=renderer.encoding, strict=True)
        return sum(map(len, comps))

    def ref_parse() -> int:
        for t in comps:
            ref.parse_messages_from_completion_tokens(t, oh.Role.ASSISTANT)
        return sum(map(len, comps))

    def ours_stream() -> int:
        for t in comps:
            parser = StreamParser(renderer.encoding)
            for token in t:
                parser.feed(token)
            parser.finish()
        return sum(map(len, comps))

    def ref_stream() -> int:
        for t in comps:
            parser = oh.StreamableParser(ref, role=oh.Role.ASSISTANT)
            for token in t:
                parser.process(token)
            parser.process_eos()
        return sum(map(len, comps))

    rows: list[tuple[str, float, float]] = [
        (
            "render (completion mode)",
            best_rate(ours_render, args.rounds),
            best_rate(ref_render, args.rounds),
        ),
        ("parse (tolerant)", best_rate(ours_parse, args.rounds), best_rate(ref_parse, args.rounds)),
        (
            "parse (strict)",
            best_rate(ours_parse_strict, args.rounds),
            best_rate(ref_parse, args.rounds),
        ),
        (
            "parse token by token",
            best_rate(ours_stream, args.rounds),
            best_rate(ref_stream, args.rounds),
        ),
    ]
    total_render = sum(len(renderer.render(c)) for c in convs)
    print(
        f"corpus: {len(convs)} conversations, {total_render} prompt tokens, "
        f"{sum(map(len, comps))} completion tokens; best of {args.rounds} rounds; 1 thread"
    )
    print(f"{'':28}{'ours tok/s':>14}{'openai-harmony tok/s':>24}{'ratio':>8}")
    for name, ours, theirs in rows:
        print(f"{name:28}{ours:>14,.0f}{theirs:>24,.0f}{ours / theirs:>8.2f}")


if __name__ == "__main__":
    main()
