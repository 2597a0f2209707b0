"""JSON Schema → TypeScript: each deliberate divergence from the reference, both outputs shown."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.messages import DeveloperContent, Message, Role, ToolDescription
from app.harmony.renderer import Renderer
from app.harmony.schema_ts import text_lines, to_typescript


def _tool_types(oracle: Any, renderer: Renderer, schema: dict[str, Any]) -> tuple[str, str]:
    """(ours, reference) text of the developer message declaring one tool with `schema`."""
    import openai_harmony as oh

    tool = ToolDescription(name="f", description="F.", parameters=schema)
    message = Message.of(Role.DEVELOPER, DeveloperContent().with_function_tools([tool]))
    ours = renderer.encoding.decode(renderer.render_message(message))
    ref_message = oh.Message.from_role_and_content(
        oh.Role.DEVELOPER,
        oh.DeveloperContent.new().with_function_tools([oh.ToolDescription.new("f", "F.", schema)]),
    )
    return ours, oracle.decode(oracle.render(ref_message))


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


def test_divergence_array_of_enum_is_parenthesised(oracle: Any, renderer: Renderer) -> None:
    schema = _obj(units={"type": "array", "items": {"type": "string", "enum": ["a", "b"]}})
    ours, ref = _tool_types(oracle, renderer, schema)
    assert 'units: "a" | "b"[],' in ref  # reads as "a" | ("b"[])
    assert 'units: ("a" | "b")[],' in ours
    assert ours.replace('("a" | "b")[]', '"a" | "b"[]') == ref


def test_divergence_one_of_inside_items_is_an_inline_union(oracle: Any, renderer: Renderer) -> None:
    schema = _obj(v={"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "number"}]}})
    ours, ref = _tool_types(oracle, renderer, schema)
    assert "v: \n     | string\n     | number[]," in ref  # a dangling list, not valid TypeScript
    assert "v: (string | number)[]," in ours


def test_divergence_nested_description_written_once(oracle: Any, renderer: Renderer) -> None:
    schema = _obj(o={"type": "object", "description": "Nested.", "properties": {"q": {"type": "integer"}}})
    ours, ref = _tool_types(oracle, renderer, schema)
    assert ref.count("// Nested.") == 2 and "o:     // Nested.\n{" in ref
    assert ours.count("// Nested.") == 1 and "// Nested.\no: {\n    q?: number,\n    }," in ours


def test_divergence_any_of_and_null(oracle: Any, renderer: Renderer) -> None:
    schema = _obj(n={"anyOf": [{"type": "string"}, {"type": "null"}], "default": None})
    ours, ref = _tool_types(oracle, renderer, schema)
    assert "n: any, // default: null" in ref
    assert "n: string | null, // default: null" in ours


@pytest.mark.parametrize(
    "schema, expected",
    [({"type": "integer"}, "number"),
     ({"type": ["integer", "string"]}, "number | string"),
     ({"type": "array"}, "Array<any>"),
     ({"type": "array", "items": {"type": "string", "enum": ["only"]}}, '"only"[]'),
     ({"type": "array", "items": {"type": ["string", "number"]}}, "(string | number)[]"),
     ({"enum": ["a"]}, "any"),
     (True, "any")],
)
def test_small_types(schema: Any, expected: str) -> None:
    assert to_typescript(schema) == expected


def test_text_lines_follow_rust_lines() -> None:
    assert text_lines("a\r\nb\n") == ["a", "b"]
    assert text_lines("") == []
    assert text_lines("a\x0bb") == ["a\x0bb"]
