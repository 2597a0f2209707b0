"""Parallel sequences and speculative decoding in the real worker (llama.cpp on real GGUFs).

- N generations decoded together give each the greedy tokens it gives alone (SmolLM2 and the
  tiny gpt-oss), and they really ran side by side (their spans overlap);
- a client that leaves mid-stream frees its sequence at once: a queued one starts while the
  others go on, and theirs are still the tokens they give alone;
- the window's turn (reserved) starts and ends while eight clients hold or wait for the rest,
  and the eight give the same tokens or part first at a near-tie (their batches differ);
- speculative decoding gives the tokens plain decoding gives, with prompt lookup and with a
  draft model (SmolLM2 drafting for itself), drafting on every step it can (`always_draft`) —
  or differs first where plain decoding's top two are a near-tie (`NEAR_TIE`), because
  llama.cpp rounds a batch of one sequence's tokens otherwise than one token (see
  `app/engine/worker/placement.py`),
  and the adaptive policy drafts on a copying answer and keeps them;
- a draft model with another vocabulary is refused at load with a sentence that says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.domain.events import GenerationDone, TokenStep
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import SnapshotSettings
from app.errors import ModelLoadError

GREEDY = Sampling(temperature=0.0)
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "Once upon a time, in a land far away,",
    "List three colours:\n1.",
]
CODE = """def total(items):
    result = 0
    for item in items:
        if item.price > 0:
            result += item.price * item.count
    return result


def cheapest(items):
    best = None
    for item in items:
        if best is None or item.price < best.price:
            best = item
    return best
"""
COPY = (
    f"<|im_start|>user\nRename `best` to `found` in this code:\n```python\n{CODE}```<|im_end|>\n"
    f"<|im_start|>assistant\nHere is the code with `best` renamed to `found`:\n```python\n"
)

COPY_ON = f"{CODE}\n\n# The same two functions again, unchanged:\n\n{CODE[:40]}"  # it copies


# logits: where the top two are closer, llama.cpp's batched rounding may swap them. On AVX2-only
# CPUs a prompt decoded beside others parted from itself alone where the margin was 0.503.
NEAR_TIE = 1.0


def same_or_near_tie(client: WorkerClient, prompt: list[int], plain: list[int], other: list[int]) -> str:
    """"identical"; "near-tie" when the first token that differs is one of plain decoding's top
    two there and they are within `NEAR_TIE` of each other; else what differs, in words."""
    at = next((i for i, (a, b) in enumerate(zip(plain, other, strict=False)) if a != b), None)
    if at is None:
        return "identical" if len(plain) == len(other) else f"lengths {len(plain)}, {len(other)}"
    _, raw = client.logits(prompt + plain[:at])
    logits = np.frombuffer(raw, dtype=np.float32)
    first, second = (int(t) for t in np.argsort(-logits)[:2])
    margin = float(logits[first] - logits[second])
    if {plain[at], other[at]} <= {first, second} and margin < NEAR_TIE:
        return "near-tie"
    return f"token {at}: {plain[at]} against {other[at]}, margin {margin:.3f}"


def _client(model: Any, sequences: int = 1, reserved: int = 0, **settings: Any) -> WorkerClient:
    client = WorkerClient()
    client.load(
        model, n_ctx=1024, n_threads=1, sequences=sequences, reserved=reserved,
        settings=LoadSettings(speculative=settings.pop("speculative", "off"), **settings),
        snapshots=SnapshotSettings(), always_draft=True,
    )  # fmt: skip
    return client


def _ids(client: WorkerClient, text: str) -> list[int]:
    return client.tokenize(text, special=True)


def _run(
    client: WorkerClient, prompt: list[int], tokens: int, out: dict[str, Any], **kw: Any
) -> None:
    """Generate greedily; the tokens, the end and the span (start, end) into `out`."""
    out["start"] = time.monotonic()
    out["tokens"] = []
    eos = client.specials().eos
    for event in client.generate(prompt, stop_ids=[eos], sampling=GREEDY, max_tokens=tokens, **kw):
        if isinstance(event, TokenStep):
            out["tokens"].append(event.token)
            out.setdefault("first", time.monotonic())
        else:
            out["done"] = event
    out["end"] = time.monotonic()


def _together(client: WorkerClient, prompts: list[list[int]], tokens: int) -> list[dict[str, Any]]:
    outs: list[dict[str, Any]] = [{} for _ in prompts]
    pairs = zip(prompts, outs, strict=True)
    threads = [threading.Thread(target=_run, args=(client, p, tokens, o)) for p, o in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return outs


@pytest.fixture(scope="module")
def smol4(smollm_model: Any) -> Iterator[WorkerClient]:
    client = _client(smollm_model, sequences=4)
    yield client
    client.close()


@pytest.mark.parametrize("which", ["smollm2", "gpt-oss"])
def test_sequences_decoded_together_give_the_tokens_they_give_alone(
    which: str, smollm_model: Any, tiny_model: Any
) -> None:
    model = smollm_model if which == "smollm2" else tiny_model
    client = _client(model, sequences=4)
    try:
        prompts = [_ids(client, p) for p in PROMPTS]
        alone = []
        for p in prompts:
            out: dict[str, Any] = {}
            _run(client, p, 24, out)
            alone.append(out["tokens"])
        for seq_prompt in prompts:  # every sequence's cache other than the prompts' own
            _run(client, seq_prompt[:2], 2, {})
        outs = _together(client, prompts, 24)
        info = client.info
    finally:
        client.close()
    assert [o["tokens"] for o in outs] == alone
    assert all(len(t) > 0 for t in alone)
    latest_start = max(o["start"] for o in outs)
    assert all(o["end"] > latest_start for o in outs)  # they overlapped in time
    assert info is not None and info.sequences == 4


STAYING = 240  # tokens: the staying client still decodes well after the queued one starts


def test_a_client_that_leaves_frees_its_sequence_and_the_others_go_on(smollm_model: Any) -> None:
    """The staying client asks for many more tokens than the 48 compared with its answer alone,
    so that "the queued one started while the other still decoded" does not hang on a few
    milliseconds (it once missed by half of one under load)."""
    client = _client(smollm_model, sequences=2)
    try:
        prompts = [_ids(client, p) for p in PROMPTS[:3]]
        alone: dict[str, Any] = {}
        _run(client, prompts[1], 48, alone)
        leaving = client.generate(prompts[0], stop_ids=[], sampling=GREEDY, max_tokens=400)
        staying: dict[str, Any] = {}
        queued: dict[str, Any] = {}
        first = next(leaving)  # the first token: it holds a sequence
        assert isinstance(first, TokenStep)
        stay = threading.Thread(target=_run, args=(client, prompts[1], STAYING, staying))
        stay.start()
        time.sleep(0.3)
        wait = threading.Thread(target=_run, args=(client, prompts[2], 8, queued))
        wait.start()
        time.sleep(0.5)
        assert "first" not in queued  # both sequences are taken: it waits
        leaving.close()  # the client leaves mid-stream
        left = time.monotonic()
        wait.join(120)
        stay.join(120)
    finally:
        client.close()
    assert queued["first"] - left < 5.0 and queued["tokens"]
    assert isinstance(staying["done"], GenerationDone) and staying["tokens"][:48] == alone["tokens"]
    assert len(staying["tokens"]) > 48, len(staying["tokens"])  # it went on past the compared part
    assert queued["first"] < staying["end"]  # it started while the other still decoded


def test_a_short_prompt_is_answered_while_a_long_one_is_still_being_read(smol4: WorkerClient) -> None:
    """Prompts share each step's room, the shortest first: a short request that comes while a
    long prompt is being read is read whole in the next step and answered before the long
    prompt's first token (it used to wait for the whole long prompt)."""
    long_prompt = _ids(smol4, "The history of the lighthouse, told at length. " * 120)[:900]
    short_prompt = _ids(smol4, "Say hi.")
    long_out: dict[str, Any] = {}
    short_out: dict[str, Any] = {}
    reading = threading.Thread(target=_run, args=(smol4, long_prompt, 4, long_out))
    reading.start()
    time.sleep(0.2)  # the long prompt's first chunks are being read
    _run(smol4, short_prompt, 4, short_out)
    reading.join(300)
    assert len(long_prompt) == 900 and long_out["done"].timings.prompt_tokens == 900
    assert short_out["end"] < long_out["first"], (short_out, long_out)


def test_the_windows_turn_starts_while_eight_clients_are_busy(smollm_model: Any) -> None:
    client = _client(smollm_model, sequences=3, reserved=1)
    try:
        prompt = _ids(client, PROMPTS[2])
        outs = [{} for _ in range(8)]  # type: ignore[var-annotated]
        threads = [
            threading.Thread(target=_run, args=(client, prompt, 160, o)) for o in outs
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while client.sequence_use()["queued"] < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        use = client.sequence_use()
        window: dict[str, Any] = {}
        _run(client, _ids(client, PROMPTS[0]), 8, window, reserved=True)
        for t in threads:
            t.join(600)
        first = outs[0]["tokens"]
        verdicts = [same_or_near_tie(client, prompt, first, o["tokens"]) for o in outs[1:]]
    finally:
        client.close()
    assert use == {"total": 3, "reserved": 1, "busy": 2, "queued": 6}
    assert window["tokens"] and isinstance(window["done"], GenerationDone)
    still = [o for o in outs if o["end"] > window["end"]]
    assert len(still) >= 6  # the window did not wait for the clients' queue
    # the same prompt decoded beside one, two or no others: the same tokens, or parted at a tie
    assert all(v in ("identical", "near-tie") for v in verdicts), verdicts


@pytest.mark.parametrize("kind", ["lookup", "draft"])
def test_speculative_decoding_gives_the_tokens_plain_decoding_gives(
    kind: str, smollm_model: Any
) -> None:
    plain = _client(smollm_model)
    extra = {"draft_model": str(smollm_model)} if kind == "draft" else {}
    fast = _client(smollm_model, speculative=kind, **extra)
    try:
        prompt = _ids(plain, COPY)
        expected: dict[str, Any] = {}
        got: dict[str, Any] = {}
        _run(plain, prompt, 120, expected)
        _run(fast, prompt, 120, got)
        verdict = same_or_near_tie(plain, prompt, expected["tokens"], got["tokens"])
    finally:
        plain.close()
        fast.close()
    assert verdict in ("identical", "near-tie") and len(expected["tokens"]) >= 60, verdict
    timings = got["done"].timings
    assert timings.drafted > 0 and 0 < timings.accepted <= timings.drafted
    assert expected["done"].timings.drafted == 0


def test_the_adaptive_policy_drafts_where_the_answer_copies(smollm_model: Any) -> None:
    client = WorkerClient()
    client.load(smollm_model, n_ctx=1024, n_threads=1, settings=LoadSettings(speculative="lookup"))
    try:
        out: dict[str, Any] = {}
        _run(client, _ids(client, COPY_ON), 120, out)
    finally:
        client.close()
    timings = out["done"].timings
    assert timings.drafted > 0 and timings.accepted >= timings.drafted // 2, timings


def test_a_draft_model_with_another_vocabulary_is_refused(
    smollm_model: Any, gemma_model: Any
) -> None:
    client = WorkerClient()
    settings = LoadSettings(speculative="draft", draft_model=str(gemma_model))
    try:
        with pytest.raises(ModelLoadError) as caught:
            client.load(smollm_model, n_ctx=512, n_threads=1, settings=settings)
    finally:
        client.close()
    said = caught.value.message
    assert f"the draft model {Path(gemma_model).name} cannot draft for this model" in said
    assert "vocabulary has 262144 tokens; the model's has 49152" in said
