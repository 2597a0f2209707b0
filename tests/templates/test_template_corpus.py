"""Every official llama.cpp chat template that writes tool calls (tests/fixtures/llama_templates)
has its own calls read back: a conversation whose assistant turn is one call, two calls, or
prose then a call (where the template allows them) is rendered by the template, what the
assistant turn adds after the generation prompt (its end-of-turn marker dropped) goes through
`harmony-desk replay --template FILE.jinja`, and the calls come back with their names and
arguments, the prose as the answer, no markup in it, no reasoning. The think tags are the ones
the app reads the template with: its own reasoning markup where it writes some
(`app/templates/reasoning_markup.py`). gpt-oss's own template is read as Harmony (a GGUF
carrying it gets `harmony`): it writes prose beside a call as an `analysis` message, which is
read back as reasoning, never as the answer. A template that cannot be read is listed in
LEFT_OUT with why; any other failure fails, and so does a listed template that passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.templates.calls.detect import call_messages, renderer, turn_part
from app.templates.jinja import GgufJinja, jinja_template
from app.templates.jinja_render import JinjaTemplateError
from app.templates.reasoning_markup import THINK_TAGS
from tests.templates.replay_calls import read_calls, replayed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": n,
            "description": "A test tool.",
            "parameters": {"type": "object", "properties": p},
        },
    }
    for n, p in (
        # (each argument described, as real declarations are: Cohere's template writes it)
        ("get_weather", {"city": {"type": "string", "description": "A city"},
                         "days": {"type": "integer", "description": "How many days"}}),
        ("get_time", {"zone": {"type": "string", "description": "A time zone"}}),
    )
]
Call = tuple[str, dict[str, Any]]  # a tool's name and its arguments
WEATHER: Call = ("get_weather", {"city": "Paris, France", "days": 3})
TIME: Call = ("get_time", {"zone": "CET"})
PROSE = "Let me check that for you."
CASES: dict[str, tuple[list[Call], str]] = {
    "one call": ([WEATHER], ""),
    "two calls": ([WEATHER, TIME], ""),
    "prose then a call": ([WEATHER], PROSE),
}

HARMONY = "openai-gpt-oss-120b"  # Harmony: its own parser (app/harmony), not a text call format
LEFT_OUT = {
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": "drops an assistant's tool calls (writes only its text)",
}


def _templates() -> list[str]:
    return sorted(
        p.stem for p in FIXTURES.glob("*.jinja") if "tool_calls" in p.read_text(encoding="utf-8")
    )


def _lines(source: str) -> dict[str, str]:
    """The assistant's generated text for each case the template can render."""
    render = renderer(source, "", "", TOOLS)
    tags = _think_tags(source)
    head = [{"role": "user", "content": "What is the weather in Paris, and the time there?"}]
    out: dict[str, str] = {}
    for case, (calls, prose) in CASES.items():
        try:
            part = _turn(render, head, calls, prose)
        except JinjaTemplateError:
            continue  # the template refuses this shape (e.g. one call a turn)
        if (prose and prose not in part.body) or any(n not in part.body for n, _ in calls):
            continue  # the template drops text beside a call, or a call beside text
        out[case] = _thinking_closed(part.generated, tags)
    return out


def _turn(render: Any, head: list[dict[str, Any]], calls: list[Any], prose: str) -> Any:
    """The turn with its calls' arguments as objects, or as JSON text for a template that takes
    only text there (Functionary's, as `detect` renders it)."""
    try:
        return turn_part(render, head, call_messages(calls, prose))
    except JinjaTemplateError:
        return turn_part(render, head, call_messages(calls, prose, string_arguments=True))


def _think_tags(source: str) -> tuple[str, str]:
    """The template's own reasoning markup where the app reads its turns with it, else
    `<think>`/`</think>` (a family's own think tags may be call markup as well)."""
    template = jinja_template(source)
    if isinstance(template, GgufJinja) and template.reasoning is not None:
        mine = template.reasoning.tags
        return mine if template.think_tags == mine else THINK_TAGS
    return THINK_TAGS


def _thinking_closed(text: str, tags: tuple[str, str] = THINK_TAGS) -> str:
    """The turn as the parser meets it: a think block the generation prompt opened is opened
    here (the parser does not see the prompt), one the template leaves open is dropped."""
    opening, closing = tags
    opened, closed = text.find(opening), text.find(closing)
    if closed >= 0 and not 0 <= opened < closed:
        return opening + text
    return text.replace(opening, "", 1) if opened >= 0 and closed < 0 else text


def _problems(name: str, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> list[str]:
    path = FIXTURES / f"{name}.jinja"
    cases = _lines(path.read_text(encoding="utf-8"))
    if "one call" not in cases:
        return ["the template renders no call"]
    problems = []
    for (case, text), out in zip(
        cases.items(), replayed(path, list(cases.values()), monkeypatch, capsys, TOOLS), strict=True
    ):
        calls, prose = CASES[case]
        thought = ""
        if name == HARMONY:  # prose beside a call is an `analysis` message: reasoning
            prose, thought = "", prose
        if "error" in out:
            problems.append(f"{case}: {out['error']}")
            continue
        got, answer = read_calls(out)
        answer = answer.strip()
        want = [(f"functions.{n}", a) for n, a in calls]
        if (
            got != want
            or answer != prose
            or out["errors"]
            or out["hidden"]["analysis"].strip() != thought
        ):
            problems.append(f"{case}: {text!r} read as {out['shown']}")
    return problems


def test_the_corpus_is_all_there() -> None:
    names = _templates()
    assert len(names) == 63 and HARMONY in names  # 62 call-writing templates beside Harmony
    assert set(LEFT_OUT) <= set(names)


@pytest.mark.parametrize("name", _templates())
def test_each_templates_own_calls_read_back(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    problems = _problems(name, monkeypatch, capsys)
    if name in LEFT_OUT:
        assert problems, f"{name} now reads back: take it off LEFT_OUT"
        return
    assert not problems, "\n".join(problems)
