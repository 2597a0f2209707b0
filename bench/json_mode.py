"""JSON-mode engines side by side, on both vocabularies, in one run.

Usage: python bench/json_mode.py [--tokens 64]

For o200k_harmony (the tiny gpt-oss GGUF, 201,088 tokens) and Gemma 3 (262,144 tokens):
per-token mask time (median, p99) and schema compile time of llguidance (ours), llama.cpp's
GBNF sampler and lm-format-enforcer, over the same token sequences; then end-to-end decode
tokens/s through our worker, constrained vs unconstrained, on Gemma with the same prompt.
Goals: mask <= 0.1 ms median on 201k tokens, compile <= 5 ms, constrained/unconstrained >= 0.95.
The mask's application to the candidates is timed in generations of their own, over the same
tokens: ours (only the allowed or only the disallowed ids touched, a mask met again not read
again) and the reference it replaced (every bit unpacked, then a boolean index), as a ratio;
then all the sampler does per token, mask computation included, as the worker runs it with a
spare core (the next mask worked out while the model decodes: the sampler waits for it and
applies it) against the reference's mask computation and application. llama.cpp on one thread,
one thing at a time. Checked before printing (no figures otherwise, exit status 1): the three
ways of applying the mask made the same tokens, at least one; end to end, the constrained and
the unconstrained runs each generated `--tokens` tokens.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.constrain.constraint import json_constraint
from app.domain.events import TokenStep
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.worker.mask_plans import TOKEN_DATA
from app.engine.worker.masking import MaskFactory
from app.engine.worker.running import sampler_chain
from app.library.bundled import gemma_model_path
from tests.json_schemas import SCHEMAS
from tests.tiny_gpt_oss import build

SUITE = ["03_int_bounds", "13_nested_object", "14_array_of_objects", "17_ref_defs", "32_invoice"]
LONG = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": 99},
    "minItems": 40,
    "maxItems": 40,
}


def load(path: Path) -> Any:
    import llama_cpp
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params
    try:
        return llama_cpp.Llama(
            model_path=str(path), n_ctx=1024, n_threads=1, n_threads_batch=1, verbose=False
        )
    finally:
        low.llama_model_default_params = original


def ms(values: list[float]) -> tuple[float, float]:
    return statistics.median(values) * 1000, float(np.percentile(values, 99)) * 1000


def reference_apply(mask: Any, array_p: Any) -> None:
    """The application JSON mode used before, on the same candidate array: a logits processor
    given the strided logit column, every bit of the mask unpacked, then a boolean scatter."""
    n = int(array_p.contents.size)
    raw = (ctypes.c_char * (n * TOKEN_DATA.itemsize)).from_address(
        ctypes.addressof(array_p.contents.data.contents)
    )
    logits = np.frombuffer(memoryview(raw), dtype=TOKEN_DATA, count=n)["logit"]
    allowed = np.unpackbits(mask._mask.view(np.uint8), bitorder="little")[:n]
    logits[allowed == 0] = -np.inf


def ours(
    llm: Any, prompt: list[int], schema: dict[str, Any], n: int, apply_way: str = "ours"
) -> tuple[list[int], dict[str, Any]]:
    """Generate under our mask; return the tokens and timings: schema check (jsonschema's
    meta-schema + llguidance), matcher compile, and per token the mask computation
    (llguidance) and its application to the candidates — ours ("ours"), the reference
    ("reference"), or, with "ahead", ours as the worker runs it with a spare core: the next
    mask worked out beside the decode, and "apply" is then all the sampler still does (wait
    for it and apply it). Each in a generation of its own, so that none finds the caches as
    another left them (greedy: all make the same tokens)."""
    factory = MaskFactory(llm, use_ahead=apply_way == "ahead")
    factory.mask(
        json_constraint({"type": "object"}).grammar, [llm.token_eos()]
    )  # build the tokenizer
    t0 = time.perf_counter()
    constraint = json_constraint(schema)
    t1 = time.perf_counter()
    mask = factory.mask(constraint.grammar, [llm.token_eos()])
    t2 = time.perf_counter()
    fill: list[float] = []
    apply: list[float] = []

    def timed(array_p: Any) -> None:
        """Our sampler at the head of the chain, its two halves timed."""
        if apply_way == "ahead":
            t = time.perf_counter()
            mask.on_candidates(array_p)
            apply.append(time.perf_counter() - t)
            return
        t = time.perf_counter()
        mask.fill()
        fill.append(time.perf_counter() - t)
        t = time.perf_counter()
        if apply_way == "ours":
            mask.restrict(array_p)
        else:
            reference_apply(mask, array_p)
        apply.append(time.perf_counter() - t)

    def sampler(**options: Any) -> Any:
        # the chain the worker builds for a greedy generation (the bench decodes greedily)
        assert options.get("temp") == 0.0, options
        chain = sampler_chain(
            llm.n_vocab(), llm.last_n_tokens_size, Sampling(temperature=0.0), mask
        )
        chain.custom_samplers[0][1].apply_func = timed  # the same place, timed
        return chain

    tokens: list[int] = []
    llm._init_sampler = sampler
    try:
        for token in llm.generate(prompt, temp=0.0, top_k=0, top_p=1.0, min_p=0.0, reset=True):
            tokens.append(int(token))
            if not mask.consume(int(token)) or mask.finished or len(tokens) >= n:
                break
    finally:
        del llm._init_sampler
        mask.discard()
    return tokens, {"check": t1 - t0, "compile": t2 - t1, "fill": fill, "apply": apply}


def lmfe(
    llm: Any, prompt: list[int], schema: dict[str, Any], tokens: list[int], data: Any
) -> tuple[list[float], float]:
    from lmformatenforcer import JsonSchemaParser, TokenEnforcer

    t0 = time.perf_counter()
    enforcer = TokenEnforcer(data, JsonSchemaParser(schema))
    enforcer.get_allowed_tokens(list(prompt))
    compile_s = time.perf_counter() - t0
    times = []
    for i in range(1, len(tokens)):
        t = time.perf_counter()
        enforcer.get_allowed_tokens(list(prompt) + tokens[:i])
        times.append(time.perf_counter() - t)
    return times, compile_s


def gbnf(llm: Any, prompt: list[int], schema: dict[str, Any], n: int) -> tuple[float, float, float]:
    """(compile s, ms per token with the grammar, ms per token without) on the same prompt."""
    import llama_cpp

    t0 = time.perf_counter()
    grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    compile_s = time.perf_counter() - t0

    def per_token(**kw: Any) -> float:
        stamps = []
        for _ in llm.generate(prompt, temp=0.0, top_k=0, top_p=1.0, min_p=0.0, reset=True, **kw):
            stamps.append(time.perf_counter())
            if len(stamps) >= min(n, 24):
                break
        return (stamps[-1] - stamps[0]) / max(len(stamps) - 1, 1) * 1000

    return compile_s, per_token(grammar=grammar), per_token()


def vocab_report(label: str, path: Path, n: int) -> None:
    from lmformatenforcer.integrations.llamacpp import build_token_enforcer_tokenizer_data

    llm = load(path)
    prompt = llm.tokenize(b"Answer in JSON: ", add_bos=True)
    t0 = time.perf_counter()
    data = build_token_enforcer_tokenizer_data(llm)
    lmfe_prep = time.perf_counter() - t0
    print(f"\n== {label}: vocabulary {llm.n_vocab()} (lm-format-enforcer prep {lmfe_prep:.1f} s)")
    print(f"{'schema':22}{'engine':24}{'compile ms':>11}{'mask ms med':>12}{'mask ms p99':>12}")
    for name in SUITE:
        schema = SCHEMAS[name]
        tokens, t = ours(llm, prompt, schema, n)
        same, r = ours(llm, prompt, schema, n, apply_way="reference")
        also, a = ours(llm, prompt, schema, n, apply_way="ahead")
        if not tokens or not same == tokens == also:
            raise SystemExit("no figures: the ways of applying the mask made other tokens")
        med, p99 = ms(t["fill"])
        print(
            f"{name:22}{'llguidance (ours)':24}{t['compile'] * 1000:>11.2f}{med:>12.3f}{p99:>12.3f}"
        )
        rows = [
            ("  + apply mask (ours)", t["apply"]),
            ("  + apply (reference)", r["apply"]),
            ("  sampler, ahead (ours)", a["apply"]),
            ("  sampler (reference)", [f + x for f, x in zip(r["fill"], r["apply"], strict=True)]),
        ]
        figures = {label: ms(values) for label, values in rows}
        for label, (med, p99) in figures.items():
            print(f"{'':22}{label:24}{'':>11}{med:>12.3f}{p99:>12.3f}")
        for label, mine, theirs in [
            ("  apply: ours / ref", "  + apply mask (ours)", "  + apply (reference)"),
            ("  sampler: ahead / ref", "  sampler, ahead (ours)", "  sampler (reference)"),
        ]:
            (m_med, m_p99), (r_med, r_p99) = figures[mine], figures[theirs]
            print(f"{'':22}{label:24}{'':>11}{m_med / r_med:>12.2f}{m_p99 / r_p99:>12.2f}")
        print(f"{'':22}{'  + schema check (app)':24}{t['check'] * 1000:>11.2f}")
        times, comp = lmfe(llm, prompt, schema, tokens, data)
        med, p99 = ms(times) if times else (float("nan"), float("nan"))
        print(f"{'':22}{'lm-format-enforcer':24}{comp * 1000:>11.2f}{med:>12.3f}{p99:>12.3f}")
        try:
            comp, with_g, without = gbnf(llm, prompt, schema, n)
            cost = (
                with_g - without
            )  # GBNF masks inside llama.cpp: its cost is the per-token slowdown
            print(
                f"{'':22}{'llama.cpp GBNF':22}{comp * 1000:>12.2f}{cost:>13.3f}{'(slowdown)':>13}"
            )
        except (ValueError, RuntimeError) as exc:
            print(f"{'':22}{'llama.cpp GBNF':24}  refused: {str(exc)[:50]}")
    del llm


def end_to_end(n: int) -> None:
    with WorkerClient() as client:
        client.load(gemma_model_path(), n_ctx=1024, n_threads=1)
        from app.engine.local.tokenizer import ModelTokenizer

        tok = ModelTokenizer(client)
        prompt = tok.bos_ids + tok.tokenize("Forty numbers in JSON: ", special=False)
        constraint = json_constraint(LONG)
        list(
            client.generate(prompt, stop_ids=[tok.eos_id], max_tokens=2, constraint=constraint)
        )  # warm-up

        def rate(**kw: Any) -> float:
            stamps = [
                time.perf_counter()
                for e in client.generate(
                    prompt, stop_ids=[], sampling=Sampling(temperature=0.0), max_tokens=n, **kw
                )
                if isinstance(e, TokenStep)
            ]
            if len(stamps) != n:
                raise SystemExit(f"no figures: a run generated {len(stamps)} of {n} tokens")
            return (len(stamps) - 1) / (stamps[-1] - stamps[0])

        free = statistics.median(rate() for _ in range(3))
        bound = statistics.median(rate(constraint=constraint) for _ in range(3))
    print(f"\n== end to end, Gemma 3 270M through our worker, 1 thread, greedy, up to {n} tokens")
    print(f"{'unconstrained tok/s':32}{free:>10.1f}")
    print(f"{'constrained tok/s':32}{bound:>10.1f}")
    print(f"{'constrained / unconstrained':32}{bound / free:>10.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    vocab_report("o200k_harmony (tiny gpt-oss)", build(), args.tokens)
    vocab_report("Gemma 3 270M", gemma_model_path(), args.tokens)
    end_to_end(args.tokens)


if __name__ == "__main__":
    main()
