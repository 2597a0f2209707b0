"""The tool API, the registry and the everyday built-in tools (the start of the tools issue)."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from app.harmony.renderer import developer_text
from app.tools.api import Risk, ToolContext, ToolError, tool
from app.tools.builtin.everyday import calculate, current_time
from app.tools.registry import DuplicateToolError, ToolRegistry


@tool(risk=Risk.NETWORK, deadline_ms=5000)
def lookup(city: str, days: int = 1, ctx: ToolContext | None = None) -> str:
    """Look up the weather for a city."""
    return f"{city}:{days}"


def test_a_typed_function_becomes_a_tool_with_a_schema() -> None:
    assert lookup.qualified_name == "functions.lookup" and lookup.risk is Risk.NETWORK
    assert lookup.parameters == {
        "type": "object", "additionalProperties": False, "required": ["city"],
        "properties": {"city": {"title": "City", "type": "string"},
                       "days": {"title": "Days", "type": "integer", "default": 1}},
    }
    assert lookup.parse_arguments({"city": "Oslo"}).model_dump() == {"city": "Oslo", "days": 1}
    with pytest.raises(ValidationError):
        lookup.parse_arguments({"city": "Oslo", "extra": 1})


def test_a_tool_needs_a_docstring_and_annotations() -> None:
    with pytest.raises(TypeError, match="docstring"):
        tool(lambda x: x)
    with pytest.raises(TypeError, match="type annotation"):

        @tool
        def untyped(x):  # type: ignore[no-untyped-def]
            """Untyped."""


def test_duplicate_names_are_refused_with_how_to_resolve() -> None:
    twin = tool(name="lookup")(lambda: None) if False else None
    registry = ToolRegistry([lookup, calculate])
    other = type(lookup)(**{**lookup.__dict__, "plugin": "weather-plugin"})
    with pytest.raises(DuplicateToolError, match=r"disable one of the plugins.*@tool\(name=\.\.\.\)"):
        registry.add(other)
    assert twin is None and len(registry) == 2


def test_registry_renders_the_functions_namespace() -> None:
    text = developer_text(ToolRegistry([lookup, calculate]).developer_content("Be brief."))
    assert "namespace functions {" in text and "type lookup = (_: {" in text and "city: string," in text
    assert "// Look up the weather for a city." in text


@pytest.mark.parametrize(
    "expression, result", [("1 + 2 * 3", 7), ("(2 ** 10) / 4", 256.0), ("-7 // 2", -4), ("10 % 3", 1)]
)
def test_calculator(expression: str, result: float) -> None:
    assert calculate.function(expression)["result"] == result


@pytest.mark.parametrize(
    "expression, words",
    [("__import__('os').system('true')", "only arithmetic"), ("9 ** 9999999", "too large"),
     ("1 / 0", "division by zero"), ("x + 1", "only arithmetic"), ("1 +", "not an arithmetic"),
     ("1" * 600, "longer than")],
)
def test_calculator_refuses_anything_but_arithmetic(expression: str, words: str) -> None:
    with pytest.raises(ToolError, match=words):
        calculate.function(expression)


def test_current_time() -> None:
    out = current_time.function("Europe/Oslo")
    assert dt.datetime.fromisoformat(out["iso"]).tzinfo is not None
    with pytest.raises(ToolError, match="unknown time zone"):
        current_time.function("Mars/Olympus")
