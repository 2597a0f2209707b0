"""A reply's figures are said one way: from the debug record's timings, None when not measured."""

from __future__ import annotations

from app.domain.figures import Figures


def test_figures_come_from_the_timings_and_say_only_what_was_measured() -> None:
    timings = {"tokens_per_s": 41.96, "generated": 128, "prompt_tokens": 300, "first_token_ms": 180.4}
    figures = Figures.of(timings, "length", "SmolLM2")
    assert figures.footer() == "SmolLM2 · 42.0 tok/s · 128 tokens · first token 180 ms · cut at the token limit"
    assert figures.speed() == "42.0 tok/s · first token 180 ms"
    empty = Figures.of({}, "", "")
    assert empty.tokens_per_s is None and empty.generated is None and empty.footer() == "" and empty.speed() == ""
    assert Figures.of({"generated": 1}, "stop").footer() == "1 token · finished"
    assert Figures.of({"generated": "x"}).generated is None  # a damaged record is not a number
