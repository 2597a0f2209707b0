"""The corpus once more through the learned format alone: every official llama.cpp chat template
that writes tool calls (tests/fixtures/llama_templates) is read with the per-family formats
switched off (`detect(..., families=False)`), so only a format learned from the template's own
renderings can read its calls. A conversation whose assistant turn is one call, two calls, or
prose then a call (where the template allows them) is rendered by the template; what the
assistant turn adds goes through the same `replay` reading as `harmony-desk replay --template`
(`replay_text`), and the calls come back with their names and arguments, the prose as the
answer, no markup in it, no notice. A template the learned format cannot read is listed in
LEARN_LEFT_OUT with why — and, for a template with no learned format, detection must say so
(`format` None with a reason), never hand back a wrong one; any other failure fails, and so does a
listed template that passes. How many templates are learned is printed and checked.
"""

from __future__ import annotations

from functools import cache
from typing import Any, cast

import pytest

from app.cli.replay_template import replay_text
from app.templates.calls.detect import Detection, detect
from app.templates.jinja import GgufJinja
from tests.templates.replay_calls import read_calls
from tests.templates.test_template_corpus import CASES, FIXTURES, TOOLS, _lines, _templates

CALLS_READ = "calls learned and read"
LEARN_LEFT_OUT = {
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": "drops an assistant's tool calls (writes only its"
    " text): there are no calls to learn",
    # the calls are learned and read; what the turn writes around them is not a call's markup
    "openai-gpt-oss-120b": "calls learned and read (one a turn), but this is Harmony, read by the"
    " Harmony parser and never as text: as text, prose beside a call is an `analysis` message"
    " whose channel markup reaches the answer",
}


class LearnedOnly(GgufJinja):
    """The GGUF template with no per-family format: only a learned one, or none."""

    def detection(self) -> Detection:
        return detect(self.source, self.bos, self.eos, families=False)


def _opened(text: str, template: GgufJinja) -> str:
    """The turn as the parser meets it with the think block it reads (`think_block`, none
    where the template has none): a block the prompt opened (its close is there, its open is
    not) is opened here, as `_thinking_closed` does for `<think>`."""
    block = template.think_block()
    if block is None:
        return text
    opening, closing = block.tags
    at, closed = text.find(opening), text.find(closing)
    return opening + text if closed >= 0 and not 0 <= at < closed else text


@cache
def _read(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(what went wrong with the calls, what went wrong with anything) for template `name`."""
    source = (FIXTURES / f"{name}.jinja").read_text(encoding="utf-8")
    template = LearnedOnly(source)
    found = template.detection()
    if found.format is None:
        assert found.reason, "a template with no learned format says why"
        why = (f"nothing learned: {found.reason}",)
        return why, why
    cases = _lines(source)
    if "one call" not in cases:
        return ("the template renders no call",), ("the template renders no call",)
    calls_wrong, problems = [], []
    for case, text in cases.items():
        out = replay_text(template, {"text": _opened(text, template), "tools": TOOLS})
        calls, prose = cast(Any, CASES)[case]
        got, answer = read_calls(out)
        answer = answer.strip()
        want = [(f"functions.{n}", a) for n, a in calls]
        said = f"{case}: {text!r} read as {out['shown']}"
        if got != want or out["errors"]:
            calls_wrong.append(said)
        if got != want or answer != prose or out["errors"]:
            problems.append(said)
    return tuple(calls_wrong), tuple(problems)


def _problems(name: str) -> tuple[str, ...]:
    return _read(name)[1]


@pytest.mark.parametrize("name", _templates())
def test_each_template_is_read_by_its_learned_format(name: str) -> None:
    problems = _problems(name)
    if name in LEARN_LEFT_OUT:
        assert problems, f"{name} is now learned: take it off LEARN_LEFT_OUT"
        return
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "name", sorted(n for n, why in LEARN_LEFT_OUT.items() if why.startswith(CALLS_READ))
)
def test_a_left_out_template_whose_calls_are_read_has_them_read(name: str) -> None:
    """Left out for what surrounds its calls (reasoning markup), its calls still read back."""
    calls_wrong, _ = _read(name)
    assert not calls_wrong, "\n".join(calls_wrong)


def test_how_many_templates_are_learned(capsys: Any) -> None:
    names = _templates()
    learned = [n for n in names if not _problems(n)]
    with capsys.disabled():
        print(
            f"\nthe learned format alone reads {len(learned)} of the {len(names)} official"
            " templates that write tool calls; it does not read:"
        )
        for name in sorted(set(names) - set(learned)):
            print(f"  {name}: {LEARN_LEFT_OUT.get(name, 'NOT LISTED: ' + _problems(name)[0])}")
    assert set(LEARN_LEFT_OUT) <= set(names)
    assert sorted(set(names) - set(learned)) == sorted(LEARN_LEFT_OUT)
