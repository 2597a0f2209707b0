"""A reply's figures are said one way: from the debug record's timings, None when not measured;
speculative decoding's drafted and accepted tokens the same way in the debug pane and the
terminal's timing line."""

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


def test_the_terminal_timing_line_says_what_was_drafted_and_accepted_only_when_drafted() -> None:
    import dataclasses
    import io

    from app.cli.terminal_reply import TerminalReply
    from app.domain.events import FinishReason, GenerationDone, Timings
    from app.domain.history import Reply

    def line(timings: Timings) -> str:
        err = io.StringIO()
        terminal = TerminalReply(False, io.StringIO(), err)
        terminal.begin(Reply())
        terminal(GenerationDone(FinishReason.STOP, None, timings))
        return err.getvalue()

    plain = Timings(prompt_tokens=40, prompt_evaluated=40, first_token_ms=50.0, total_ms=550.0, generated=60)
    assert line(plain).endswith("40 evaluated, 0 reused, 0 restored]\n") and "drafted" not in line(plain)
    drafted = dataclasses.replace(plain, drafted=1200, accepted=900, prompt_restored=8, restored_from="memory")
    assert line(drafted).endswith("8 restored from memory; 1,200 drafted, 900 accepted]\n")
    assert Figures.of({"drafted": 12, "accepted": 9}).drafts() == "12 drafted, 9 accepted"
    assert Figures.of({}).drafts() == "" and Figures.of({"drafted": 0, "accepted": 0}).drafts() == ""
