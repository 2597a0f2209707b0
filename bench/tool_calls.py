"""Tool calls on plain-text models: what reading calls costs, and what constraining them costs.

Usage: python -u bench/tool_calls.py [--repeat 20] [--runs 3]

1. Parse cost, per call format (every format registered): the same generated ids — prose, then
   one call written the way the format writes it, tokenized by the bundled SmolLM2's real
   tokenizer — fed token by token through the text parser with the format (ours) and through
   the plain text parser with none (the reference), median of `--repeat` passes each, as a
   ratio. Goal: <= 1.1x. Checked before printing: every token was fed to both, the parser
   with the format read exactly the one call with its arguments, and the answer text came
   through both.
2. Decode speed of a constrained call, per family: the bundled SmolLM2 (Hermes), then tiny
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
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.events import MessageDone, TokenStep
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
from app.library.bundled import default_model_path
from app.templates.base import GrammarRequest
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.registry import get_template
from app.templates.text_output import TextOutputParser
from tests import tiny_models

PROSE = (
    "Let me look that up for you. Oslo is in the Central European time zone, one hour ahead"
    " of UTC in winter and two hours ahead in summer, so the answer depends on the date. "
) * 4
CALL = ToolCall("get_current_time", '{"timezone": "Europe/Oslo"}')
SCHEMA = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "maxLength": 40}},
    "required": ["timezone"],
    "additionalProperties": False,
}


def _parse(
    ids: Sequence[int], table: Sequence[bytes], fmt: CallFormat | None
) -> tuple[float, int, str]:
    """Seconds to feed `ids`, calls read, answer text."""
    parser = TextOutputParser(table, [], fmt)
    start = time.perf_counter()
    events = [e for i in ids for e in parser.feed(i)]
    events += parser.finish()
    took = time.perf_counter() - start
    calls = [e for e in events if isinstance(e, MessageDone) and e.lane is Lane.TOOL_CALL]
    answer = "".join(
        e.message.text for e in events if isinstance(e, MessageDone) and e.lane is Lane.ANSWER
    )
    return took, len(calls), answer


def parse_costs(tok: ModelTokenizer, repeat: int) -> None:
    table = tok.token_table()
    print(f"\n== parse cost per token, SmolLM2's tokenizer, median of {repeat} passes")
    print(f"{'format':14}{'tokens':>8}{'plain µs/tok':>14}{'calls µs/tok':>14}{'ratio':>8}")
    for name, fmt in sorted(FORMATS.items()):
        text = PROSE + "".join(p.text for p in fmt.write([CALL]))
        ids = tok.tokenize(text, special=False)
        plain = [_parse(ids, table, None) for _ in range(repeat)]
        ours = [_parse(ids, table, fmt) for _ in range(repeat)]
        assert all(n == 0 for _, n, _ in plain) and all(n == 1 for _, n, _ in ours), name
        assert all(PROSE.strip() in a for _, _, a in ours + plain), name
        p = statistics.median(t for t, _, _ in plain) / len(ids) * 1e6
        o = statistics.median(t for t, _, _ in ours) / len(ids) * 1e6
        print(f"{name:14}{len(ids):>8}{p:>14.2f}{o:>14.2f}{o / p:>8.2f}")


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
        GrammarRequest(tools={"get_current_time": SCHEMA}, tool_choice="required",
                       control=template.control_markers(tok), thinking_budget=16)
    )  # fmt: skip
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
    print(f"\n== decode, {label} ({name}, {template.tool_calls}) through our worker, 1 thread,"
          f" greedy, {n} tokens")  # fmt: skip
    print(f"call read: {calls[0].message.recipient} {calls[0].message.text}")
    print(f"{'unconstrained tok/s':32}{f:>10.1f}")
    print(f"{'constrained call tok/s':32}{b:>10.1f}")
    print(f"{'constrained / unconstrained':32}{b / f:>10.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with WorkerClient() as client:
        client.load(default_model_path(), n_ctx=1024, n_threads=1)
        tok = ModelTokenizer(client)
        parse_costs(tok, args.repeat)
        decode(client, tok, args.runs, "smollm2", "SmolLM2-135M")
    for family, template in (("qwen3", "qwen"), ("llama3", "llama-3"), ("mistral", "mistral")):
        with WorkerClient() as client:
            client.load(tiny_models.build(family), n_ctx=1024, n_threads=1)
            label = f"tiny random-weight {family} (real vocabulary)"
            decode(client, ModelTokenizer(client), args.runs, template, label)


if __name__ == "__main__":
    main()
