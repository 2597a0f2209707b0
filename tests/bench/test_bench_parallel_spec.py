"""The serving benches' own arithmetic and checks (`bench/parallel.py`, `bench/speculative.py`,
`bench/llama_server.py`), without a server: a stream counts only when it ended whole with its
tokens counted, percentiles are nearest-rank, and the last lines say what their docstrings say."""

from __future__ import annotations

import functools
import json
from typing import Any

from bench import llama_server, parallel, speculative
from bench.llama_server import Streamed, percentile, problem


def whole(tokens: int = 16, chunks: int = 10, finish: str = "length") -> Streamed:
    usage = {"completion_tokens": tokens} if tokens >= 0 else {}
    return Streamed(
        sent=1.0, first=1.5, ended=3.5, usage=usage, chunks=chunks, text="x", finish=finish,
        done=True,
    )  # fmt: skip


def test_a_whole_stream_counts() -> None:
    assert problem(whole(), 16) is None
    assert problem(whole(tokens=9, chunks=9, finish="stop"), 16) is None
    assert whole().first_token_s == 0.5
    assert whole().decode_rate == 15 / 2.0


def test_a_stream_cut_short_or_miscounted_does_not() -> None:
    cut = whole()
    cut.done = False
    assert "before its finish reason" in str(problem(cut, 16))
    assert "failed: HTTP 503" in str(problem(Streamed(error="HTTP 503"), 16))
    assert "no tokens counted" in str(problem(whole(tokens=-1), 16))
    assert "budget of 16" in str(problem(whole(tokens=12, finish="length"), 16))
    assert "budget of 16" in str(problem(whole(tokens=17, finish="stop"), 16))
    assert problem(whole(tokens=10, chunks=11, finish="stop"), 16) is None  # + the held-back text
    assert "12 text chunks for 10 tokens" in str(
        problem(whole(tokens=10, chunks=12, finish="stop"), 16)
    )
    told = whole()
    told.timings = {"predicted_n": 15}
    assert "timings say 15 tokens, its usage 16" in str(problem(told, 16))


def test_the_stream_is_read_as_sent() -> None:
    got = Streamed(sent=1.0)
    for chunk in (
        {"choices": [{"delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": "Hello"}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": " world"}, "finish_reason": "stop"}]},
        {
            "choices": [],
            "usage": {"completion_tokens": 2},
            "timings": {"draft_n": 4, "draft_n_accepted": 3},
        },
    ):
        llama_server.take(got, "data: " + json.dumps(chunk))
    llama_server.take(got, "")
    llama_server.take(got, "data: [DONE]")
    assert (got.text, got.chunks, got.tokens, got.finish, got.done) == (
        "Hello world",
        2,
        2,
        "stop",
        True,
    )
    assert speculative.drafts(got) == "4/3"
    assert speculative.drafts(Streamed(timings={"drafted": 8, "accepted": 5})) == "8/5"
    assert speculative.drafts(None) == "—"


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([3.0], 95) == 3.0
    values = [float(v) for v in range(1, 9)]
    assert (percentile(values, 50), percentile(values, 95)) == (4.0, 8.0)
    assert percentile(list(range(1, 21)), 95) == 19


def test_the_parallel_last_line() -> None:
    def row(
        server: str, clients: int, tokens: int, wall: float, model: str = "smollm2"
    ) -> parallel.Row:
        return parallel.Row(model, 2, server, clients, tokens, wall, (0.1,) * clients)

    rows = [
        row("ours", 8, 1024, 4.0),
        row("ours-serial", 8, 1024, 16.0),
        row("llama-server", 8, 1024, 5.0),
        row("ours", 1, 128, 1.0),
        row("ours-serial", 1, 128, 1.0),
        row("llama-server", 1, 128, 1.0),
        row("ours", 8, 1024, 1.0, "gemma"),
    ]
    assert (
        parallel.last_line(rows, "smollm2", 2)
        == "parallel: 8 clients 4.0× serial, 1.25× llama-server"
    )


def test_the_speculative_verdict_and_last_line() -> None:
    assert speculative.identical([("a", "a"), ("b", "b")]) == "yes"
    assert speculative.identical([("a", "a"), ("b", "c")]) == "no"  # not judged a near-tie
    speculative._TIES[("b", "c")] = True
    assert speculative.identical([("a", "a"), ("b", "c")]) == "near-tie"
    speculative._TIES.clear()

    def best(rate: float, text: str = "same") -> speculative.Best:
        return speculative.Best(rate=rate, texts=[text])

    def model(off: float, on: dict[str, float]) -> dict[tuple[str, str], speculative.Best]:
        return {
            (server, p): best(on[p] if server == "ours-lookup" else off)
            for server in ("ours-off", "ours-lookup", "llama-server", "llama-ngram")
            for p in speculative.PROMPTS
        }

    ones = dict.fromkeys(speculative.PROMPTS, 10.0)
    results = {
        "smollm2": model(10.0, ones | {"copy": 30.0, "prose": 9.0}),
        "gemma": model(10.0, ones | {"rewrite": 15.0, "chat-1": 8.5}),
    }
    assert speculative.last_line(results) == "speculative: code 1.50×, prose 0.85×, identical yes"
    del results["gemma"]
    assert speculative.last_line(results) == "speculative: code 3.00×, prose 0.90×, identical yes"
    results["smollm2"]["ours-lookup", "chat-2"].texts = ["other"]
    assert speculative.last_line(results).endswith("identical no")
    assert "from character 2: off 'me'" in speculative.parted("same", "sand")


def test_the_tie_is_judged_on_the_timed_answers_with_the_plain_servers_scores(monkeypatch: Any) -> None:
    def asked(*steps: tuple[str, float, str, float]) -> None:
        content = [{"token": t, "top_logprobs": [{"token": t, "logprob": a}, {"token": u, "logprob": b}]}
                   for t, a, u, b in steps]  # fmt: skip
        monkeypatch.setattr(speculative, "scored", lambda *_: {"logprobs": {"content": content}})

    judge = functools.partial(speculative.judge_tie, None, "http://x", "ab cX d", "ab cY d", "q", 8)
    asked(("ab", -0.1, "a", -5.0), (" c", -0.1, " d", -4.0), ("X", -0.2, "Y", -0.4), (" d", 0, "e", -9))
    assert judge()  # parted where the plain answer's second likeliest was 0.2 behind
    asked(("ab", -0.1, "a", -5.0), (" c", -0.1, " d", -4.0), ("X", -0.2, "Y", -1.2))
    assert not judge()  # a whole logit behind: not a near-tie
    asked(("ab", -0.1, "a", -5.0), (" c", -0.1, " d", -4.0), ("X", -0.2, "Z", -0.3))
    assert not judge()  # the lookup answer went on with a token the plain one did not rank second
    asked(("ab", -0.1, "a", -5.0), (" e", -0.1, " c", -0.2), ("X", -0.2, "Y", -0.3))
    assert not judge()  # asked again, the plain answer is not the timed one: no verdict from it
    asked(("ab", -0.1, "a", -5.0), (" c", -0.1, " d", -4.0), ("Y", -0.2, "X", -0.3))
    assert judge()  # asked again, the plain answer itself took the other of the two there
