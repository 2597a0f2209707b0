"""MiniMax-M3 and GigaChat 3 / 3.1 formats on their templates and under their grammars:
`detect` picks each for its official template; the lazy grammar of each accepts the format's
own calls (text then calls under `auto`, calls alone under `required`), holds arguments to the
tool's schema and refuses a call to an undeclared tool; MiniMax's namespace marker is taken as
its control token when the vocabulary has one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.templates.calls.format import ToolCall
from app.templates.calls.formats import FORMATS
from tests.templates.call_samples import detected
from tests.templates.grammar_check import accepts, grammar_of, ids_of, weather_schema

NS = "]<]minimax[>["


@pytest.mark.parametrize(
    ("template", "name"),
    [
        ("MiniMax-M3", "minimax-m3"),
        ("GigaChat3-10B-A1.8B", "gigachat3"),
        ("GigaChat3.1-10B-A1.8B", "gigachat3.1"),
    ],
)
def test_detect_picks_the_format_for_its_template(template: str, name: str) -> None:
    detected(template, name)


def _grammar(
    name: str, tools: dict[str, Any], choice: str, control: dict[str, int] | None = None
) -> str:
    return grammar_of(FORMATS[name], tools, choice, control)


def _written(name: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    # the arguments compact, as the JSON grammar writes them
    pieces = FORMATS[name].write(
        [ToolCall(n, json.dumps(a, separators=(",", ":"))) for n, a in calls]
    )
    return "".join(p.text for p in pieces)


SCHEMA = {
    **weather_schema(
        exact={"type": "boolean"},
        stops={
            "type": "array",
            "items": {"type": "object", "properties": {"at": {"type": "number"}}},
        },
    ),
    "required": ["city"],
}
GRAMMAR_CASES: list[tuple[dict[str, Any], bool]] = [
    ({"city": "Paris, France", "days": 3}, True),
    ({"city": "Oslo", "unit": "c", "exact": True, "stops": [{"at": 1.5}, {}]}, True),
    ({"city": "Oslo", "days": "three"}, False),  # a string where the schema wants an integer
    ({"city": "Oslo", "unit": "k"}, False),  # not one of the enum's values
    ({"city": "Oslo", "town": "Paris"}, False),  # not one of the tool's properties
    ({"days": 3}, False),  # the required `city` missing
    ({"city": "Oslo", "stops": [{"at": "soon"}]}, False),  # a nested value of the wrong type
]


@pytest.mark.parametrize(("args", "ok"), GRAMMAR_CASES)
def test_minimax_grammar_holds_arguments_to_the_schema(args: dict[str, Any], ok: bool) -> None:
    grammar = _grammar("minimax-m3", {"get_weather": SCHEMA}, "required")
    assert accepts(grammar, _written("minimax-m3", [("get_weather", args)])) is ok


# JSON arguments take the JSON schema's meaning: a property it does not name is allowed
GIGACHAT_GRAMMAR_CASES = [(a, ok or "town" in a) for a, ok in GRAMMAR_CASES]


@pytest.mark.parametrize(("args", "ok"), GIGACHAT_GRAMMAR_CASES)
@pytest.mark.parametrize("name", ["gigachat3", "gigachat3.1"])
def test_gigachat_grammar_holds_arguments_to_the_schema(
    name: str, args: dict[str, Any], ok: bool
) -> None:
    grammar = _grammar(name, {"get_weather": SCHEMA}, "required")
    text = _written(name, [("get_weather", args)])
    assert accepts(grammar, text) is ok


@pytest.mark.parametrize("name", ["minimax-m3", "gigachat3", "gigachat3.1"])
def test_auto_grammar_takes_text_then_calls_and_refuses_junk(name: str) -> None:
    grammar = _grammar(name, {"get_weather": SCHEMA, "other": None}, "auto")
    calls = [("get_weather", {"city": "Oslo"})]
    if name == "minimax-m3":
        calls.append(("other", {"x": "1"}))
    text = "Let me look.\n" + _written(name, calls)
    assert accepts(grammar, text)
    assert accepts(grammar, "Just an answer, with ] and <tags>.")
    assert not accepts(grammar, text.replace("get_weather", "nope"))
    assert not accepts(grammar, text.replace("city", "town"))


def test_minimax_grammar_writes_the_namespace_as_its_control_token() -> None:
    """With `]<]minimax[>[` a control token, the grammar takes that token, not its spelling."""
    token = 200013  # a reserved special token of o200k_harmony, standing in for it
    grammar = _grammar("minimax-m3", {"get_weather": SCHEMA}, "required", {NS: token})
    text = _written("minimax-m3", [("get_weather", {"city": "Oslo", "days": 2})])
    ids: list[int] = []
    for i, part in enumerate(text.split(NS)):
        ids += ([token] if i else []) + ids_of(part)
    assert accepts(grammar, ids)
    assert not accepts(grammar, text)
