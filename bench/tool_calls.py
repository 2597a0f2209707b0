"""Tool calls on plain-text models: what reading calls costs, and what constraining them costs.

Usage: python -u bench/tool_calls.py [--repeat 20] [--runs 3] [--parse-only]

1. Parse cost, per call format (every format registered, and formats learned from official
   templates that only the learned path reads): the same long generated stream for both sides
   — eight paragraphs of prose, then six calls in one go written the way the format writes
   them (one where the format writes one a turn) — tokenized by the bundled o200k
   tokenizer, each of the format's markers one control token (as a model's vocabulary has
   them), fed token by token through the text parser with the format (ours) and through the
   plain text parser with none (the reference), median of `--repeat` passes each, as a
   ratio. Goal: <= 1.1x. Pure CPU, no model. Checked before printing: every token was fed to
   both, the parser with the format read exactly the calls written (names and arguments) and
   no notice, the plain parser read none, and the answer text came through both (the prose
   alone through ours, all of the text through the plain one).
2. Decode speed of a constrained call, per family (skipped with `--parse-only`): the bundled
   SmolLM2 (Hermes), then tiny
   random-weight Qwen 3, Llama 3.1 and Mistral NeMo GGUFs with their real vocabularies (their
   decode is tiny, so the mask's share of a token is far larger than on a real model), through
   our worker, 1 thread, greedy, the prompt declaring one tool: a forced call (`tool_choice`
   required, the name and arguments held by the token mask; a thinking family's think block
   capped at 16 tokens) against an unconstrained generation
   of the same number of tokens from the same prompt, median of `--runs` each, as a ratio.
   Goal: >= 0.95.
   Checked before printing: the constrained generation's text parses to a valid call, and the
   unconstrained one produced exactly as many tokens.
Nothing else should run meanwhile (a 2-core machine's figures collapse under load).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.events import MessageDone, ParseIssue, TokenStep
from app.domain.messages import (
    Conversation,
    Message,
    Role,
    ToolDescription,
    ToolNamespaceConfig,
)
from app.domain.sampling import Sampling
from app.domain.visibility import Lane
from app.engine.local.client import WorkerClient
from app.engine.local.tokenizer import ModelTokenizer
from app.harmony.encoding import load_encoding
from app.library.bundled import default_model_path
from app.templates.base import GrammarRequest
from app.templates.calls.detect import detect
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.registry import get_template
from app.templates.text_output import TextOutputParser
from tests import tiny_models
from tests.templates.call_samples import prose_then

TEMPLATES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llama_templates"
LEARNED = ("GLM-4.6", "Kimi-K2-Instruct", "ByteDance-Seed-OSS")  # read by no family's format
CALLS = 3  # rounds of `ROUND_CALLS` after the prose
PARAGRAPHS = (
    "Let me look that up for you. Oslo is in the Central European time zone, one hour ahead"
    " of UTC in winter and two hours ahead in summer, so the answer depends on the date. ",
    "The forecast service I can reach takes a city and a number of days; for a trip next week"
    " three days is enough, and I will ask for the local time as well, since the flight lands"
    " late in the evening and the shops close early on Sundays. ",
    "Earlier results [1] said it would rain on Tuesday; the `get_weather` tool gives a fresh"
    " reading (temperature, wind, and the chance of rain per hour), which is what we need to"
    " decide between the museum and the fjord cruise. ",
    "Here is what I found so far: the cruise leaves at 10:30 and takes about three hours,"
    " tickets cost around 450 NOK, and the museum is open until 17:00. Let me check the"
    " weather for the days you are there before recommending one. ",
)
CALL = ToolCall("get_current_time", '{"timezone": "Europe/Oslo"}')
ROUND_CALLS = (
    ToolCall("get_weather", '{"city": "Oslo, Norway", "days": 3, "units": "metric"}'),
    CALL,
)
SCHEMA = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "maxLength": 40}},
    "required": ["timezone"],
    "additionalProperties": False,
}


def stream(fmt: CallFormat) -> tuple[str, list[ToolCall], str]:
    """(the generated text, the calls in it, its prose): `PARAGRAPHS` twice over, then the
    round of calls `CALLS` times in one go (one call where the format writes one a turn)."""
    several = ROUND_CALLS[1].name in prose_then(fmt, "", ROUND_CALLS)
    calls = list(ROUND_CALLS) * CALLS if several else [ROUND_CALLS[0]]
    prose = "".join(PARAGRAPHS * 2) + "\n"
    return prose_then(fmt, prose, calls), calls, prose


def tokenized(fmt: CallFormat, text: str) -> tuple[list[int], list[bytes], dict[int, str]]:
    """(ids, table, spelled): o200k for text, each of the format's markers one control token."""
    enc = load_encoding()
    markers = sorted({m for m in fmt.markers() if m}, key=len, reverse=True)
    ids_of = {m: enc.n_vocab + i for i, m in enumerate(markers)}
    ids: list[int] = []
    for part in re.split("(" + "|".join(map(re.escape, markers)) + ")", text):
        ids += [ids_of[part]] if part in ids_of else enc.encode_ordinary(part)
    return ids, [*enc.token_table, *([b""] * len(markers))], {i: m for m, i in ids_of.items()}


def _parse(
    ids: Sequence[int], table: Sequence[bytes], spelled: dict[int, str], fmt: CallFormat | None
) -> tuple[float, int, list[ToolCall], int, str]:
    """Seconds to feed `ids`, tokens fed, calls read, notices, answer text."""
    parser = TextOutputParser(table, [], fmt, spelled=spelled)
    fed = 0
    start = time.perf_counter()
    events = []
    for i in ids:
        events += parser.feed(i)
        fed += 1
    events += parser.finish()
    took = time.perf_counter() - start
    done = [e for e in events if isinstance(e, MessageDone)]
    calls = [
        ToolCall(e.message.recipient.removeprefix("functions."), e.message.text)
        for e in done
        if e.lane is Lane.TOOL_CALL and e.message.recipient
    ]
    answer = "".join(e.message.text for e in done if e.lane is Lane.ANSWER)
    notices = sum(isinstance(e, ParseIssue) for e in events)
    return took, fed, calls, notices, answer


def _same(read: Sequence[ToolCall], written: Sequence[ToolCall]) -> bool:
    return [(c.name, json.loads(c.arguments)) for c in read] == [
        (c.name, json.loads(c.arguments)) for c in written
    ]


def learned_formats() -> list[tuple[str, CallFormat]]:
    """Formats learned from official templates no family's format reads."""
    out = []
    for name in LEARNED:
        found = detect((TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")).format
        if found is not None and found not in FORMATS.values():
            out.append((f"learned:{name}", found))
    if not out:
        print("(no template in the corpus is read only by a learned format)")
    return out


def parse_costs(repeat: int) -> None:
    print(
        f"\n== parse cost per token, o200k tokenizer, markers as control tokens, median of"
        f" {repeat} passes"
    )
    print(
        f"{'format':28}{'tokens':>8}{'calls':>7}{'plain µs/tok':>14}{'calls µs/tok':>14}"
        f"{'ratio':>8}"
    )
    for name, fmt in [*sorted(FORMATS.items()), *learned_formats()]:
        text, written, prose = stream(fmt)
        ids, table, spelled = tokenized(fmt, text)
        plain = [_parse(ids, table, spelled, None) for _ in range(repeat)]
        ours = [_parse(ids, table, spelled, fmt) for _ in range(repeat)]
        assert all(fed == len(ids) for _, fed, _, _, _ in plain + ours), name
        assert all(not calls and answer == text for _, _, calls, _, answer in plain), name
        for _, _, calls, notices, answer in ours:
            assert _same(calls, written) and not notices, (name, calls[:3], notices)
            assert answer == prose, (name, answer[-200:])
        p = statistics.median(r[0] for r in plain) / len(ids) * 1e6
        o = statistics.median(r[0] for r in ours) / len(ids) * 1e6
        print(f"{name:28}{len(ids):>8}{len(written):>7}{p:>14.2f}{o:>14.2f}{o / p:>8.2f}")


def decode(client: WorkerClient, tok: ModelTokenizer, runs: int, name: str, label: str) -> None:
    template = get_template(name)
    tool = ToolDescription(
        name="get_current_time", description="The time in a zone", parameters=SCHEMA
    )
    conversation = Conversation().with_message(Message.of(Role.USER, "What time is it in Oslo?"))
    conversation = conversation.with_header(
        Role.DEVELOPER, tools={"functions": ToolNamespaceConfig(name="functions", tools=(tool,))}
    )
    prompt = template.prompt_ids(conversation, tok)
    stops = template.stop_ids(tok)
    constraint = template.grammar(
        GrammarRequest(
            tools={"get_current_time": SCHEMA},
            tool_choice="required",
            control=template.control_markers(tok),
            thinking_budget=16,
        )
    )
    greedy = Sampling(temperature=0.0)

    def run(n: int, stop_ids: list[int], **kw: object) -> tuple[float, list[int]]:
        stamps, ids = [], []
        for e in client.generate(prompt, stop_ids=stop_ids, sampling=greedy, max_tokens=n, **kw):  # type: ignore[arg-type]
            if isinstance(e, TokenStep):
                stamps.append(time.perf_counter())
                ids.append(e.token)
        return (len(stamps) - 1) / (stamps[-1] - stamps[0]), ids

    run(4, stops, constraint=constraint)  # warm-up: the vocabulary read for the mask
    bound = [run(200, stops, constraint=constraint) for _ in range(runs)]
    n = len(bound[0][1])
    parser = template.output_parser(tok)
    events = [e for i in bound[0][1] for e in parser.feed(i)] + parser.finish()
    calls = [e for e in events if isinstance(e, MessageDone) and e.lane is Lane.TOOL_CALL]
    assert calls and calls[0].message.recipient == "functions.get_current_time", events[-3:]
    free = [run(n, []) for _ in range(runs)]  # no stop: exactly as many tokens
    assert all(len(ids) == n for _, ids in free), [len(ids) for _, ids in free]
    f = statistics.median(r for r, _ in free)
    b = statistics.median(r for r, _ in bound)
    print(
        f"\n== decode, {label} ({name}, {template.tool_calls}) through our worker, 1 thread,"
        f" greedy, {n} tokens"
    )
    print(f"call read: {calls[0].message.recipient} {calls[0].message.text}")
    print(f"{'unconstrained tok/s':32}{f:>10.1f}")
    print(f"{'constrained call tok/s':32}{b:>10.1f}")
    print(f"{'constrained / unconstrained':32}{b / f:>10.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--parse-only", action="store_true", help="no model: the parse cost only")
    args = ap.parse_args()
    parse_costs(args.repeat)
    if args.parse_only:
        return
    with WorkerClient() as client:
        client.load(default_model_path(), n_ctx=1024, n_threads=1)
        decode(client, ModelTokenizer(client), args.runs, "smollm2", "SmolLM2-135M")
    for family, template in (("qwen3", "qwen"), ("llama3", "llama-3"), ("mistral", "mistral")):
        with WorkerClient() as client:
            client.load(tiny_models.build(family), n_ctx=1024, n_threads=1)
            label = f"tiny random-weight {family} (real vocabulary)"
            decode(client, ModelTokenizer(client), args.runs, template, label)


if __name__ == "__main__":
    main()
