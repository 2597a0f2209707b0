"""JSON Schema → the TypeScript-like `functions` namespace of the Harmony guide.

Guarantees: for the schemas the reference renderer (openai-harmony 0.0.8) renders well, the
text is identical to its text. Where the reference is broken this renderer is correct, and
each divergence has a named test that shows both outputs:

- an array of a union reads `("a" | "b")[]`, not `"a" | "b"[]`;
- a `oneOf` / `anyOf` inside `items` is an inline union `(A | B)[]`, not a dangling list;
- a nested object's description is written once, above its property, not again after the colon;
- `anyOf` (as pydantic writes `Optional[X]`) reads `X | null`, not `any`; `{"type": "null"}`
  reads `null`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.domain.messages import ToolNamespaceConfig

Schema = Mapping[str, Any]


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _is_enum(schema: Schema) -> bool:
    values = schema.get("enum")
    return isinstance(values, list) and len(values) > 0


def _default_text(schema: Schema, default: object, *, quote_enum_strings: bool) -> str:
    if isinstance(default, str):
        if not _is_enum(schema):
            return f'default: "{default}"'
        return f"default: {_json(default) if quote_enum_strings else default}"
    return f"default: {_json(default)}"


def _nullable(schema: object, type_str: str) -> str:
    if isinstance(schema, Mapping) and schema.get("nullable") is True and "null" not in type_str:
        return f"{type_str} | null"
    return type_str


def _str_field(schema: Schema, key: str) -> str | None:
    value = schema.get(key)
    return value if isinstance(value, str) else None


def _variants(schema: Schema, key: str) -> list[Any] | None:
    value = schema.get(key)
    return value if isinstance(value, list) else None


def _top_level_one_of(variants: list[Any], indent: str) -> str:
    out = ""
    for variant in variants:
        out += f"\n{indent} | "
        out += _nullable(variant, to_typescript(variant, f"{indent}   "))
        comments = []
        if isinstance(variant, Mapping):
            desc = _str_field(variant, "description")
            if desc is not None:
                comments.append(desc)
            if "default" in variant:
                comments.append(_default_text(variant, variant["default"], quote_enum_strings=True))
        if comments:
            out += f" // {' '.join(comments)}"
    return out


def _inline_union(variants: list[Any], indent: str) -> str:
    return " | ".join(_nullable(v, to_typescript(v, indent)) for v in variants)


def _is_union(schema: object) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if _variants(schema, "oneOf") is not None or _variants(schema, "anyOf") is not None:
        return True
    types = schema.get("type")
    if isinstance(types, list):
        return len([t for t in types if isinstance(t, str)]) > 1
    if types == "string" and _is_enum(schema):
        return len([v for v in schema["enum"] if isinstance(v, str)]) > 1
    return False


def _array(schema: Schema, indent: str) -> str:
    if "items" not in schema:
        return "Array<any>"
    items = schema["items"]
    if isinstance(items, Mapping):
        variants = _variants(items, "oneOf") or _variants(items, "anyOf")
        if variants is not None:
            return f"({_inline_union(variants, indent)})[]"
    inner = to_typescript(items, indent)
    return f"({inner})[]" if _is_union(items) else f"{inner}[]"


def _one_of_property(key: str, val: Schema, variants: list[Any], optional: str, indent: str) -> str:
    out = ""
    prop_desc = _str_field(val, "description")
    first = variants[0] if variants and isinstance(variants[0], Mapping) else {}
    skip_desc = prop_desc is not None and _str_field(first, "description") == prop_desc
    desc_above = False
    if prop_desc is not None and not skip_desc:
        out += f"{indent}// {prop_desc}\n"
        desc_above = True
    if "default" in val:
        out += f"{indent}// {_default_text(val, val['default'], quote_enum_strings=False)}\n"
    out += f"{indent}{key}{optional}:\n"
    for i, variant in enumerate(variants):
        out += f"{indent} | " + _nullable(variant, to_typescript(variant, f"{indent}   "))
        comments = []
        if isinstance(variant, Mapping):
            desc = _str_field(variant, "description")
            if not (i == 0 and desc_above) and desc is not None and desc != prop_desc:
                comments.append(desc)
            if "default" in variant:
                comments.append(
                    _default_text(variant, variant["default"], quote_enum_strings=False)
                )
        if comments:
            out += f" // {' '.join(comments)}"
        out += "\n"
    return out + f"{indent},\n"


def _property(key: str, val: object, required: set[str], indent: str) -> str:
    optional = "" if key in required else "?"
    if not isinstance(val, Mapping):
        return f"{indent}{key}{optional}: any,\n"
    out = ""
    title = _str_field(val, "title")
    if title is not None:
        out += f"{indent}// {title}\n{indent}//\n"
    one_of = val.get("oneOf")
    desc = _str_field(val, "description")
    if one_of is None and desc is not None:
        out += f"{indent}// {desc}\n"
    examples = val.get("examples")
    if isinstance(examples, list) and examples:
        out += f"{indent}// Examples:\n"
        out += "".join(f'{indent}// - "{ex}"\n' for ex in examples if isinstance(ex, str))
    if isinstance(one_of, list):
        return out + _one_of_property(key, val, one_of, optional, indent)
    # The description is already above the property: do not repeat it inside the value.
    value_schema = {k: v for k, v in val.items() if k != "description"}
    type_str = _nullable(val, to_typescript(value_schema, f"{indent}    "))
    out += f"{indent}{key}{optional}: {type_str},"
    if one_of is None and "default" in val:
        out += f" // {_default_text(val, val['default'], quote_enum_strings=False)}"
    return out + "\n"


def _object(schema: Schema, indent: str) -> str:
    out = ""
    desc = _str_field(schema, "description")
    if desc is not None:
        out += f"{indent}// {desc}\n"
    out += "{\n"
    props = schema.get("properties")
    if isinstance(props, Mapping):
        req = schema.get("required")
        required = {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()
        out += "".join(_property(key, val, required, indent) for key, val in props.items())
    return out + f"{indent}}}"


def _scalar(type_name: str, schema: Schema, indent: str) -> str:
    if type_name == "object":
        return _object(schema, indent)
    if type_name == "string":
        values = schema.get("enum")
        if isinstance(values, list):
            quoted = [f'"{v}"' for v in values if isinstance(v, str)]
            if quoted:
                return " | ".join(quoted)
        return "string"
    if type_name in ("number", "integer"):
        return "number"
    if type_name in ("boolean", "null"):
        return type_name
    if type_name == "array":
        return _array(schema, indent)
    return "any"


def to_typescript(schema: object, indent: str = "") -> str:
    """The TypeScript-like type of a JSON Schema, as the Harmony `functions` namespace uses."""
    if not isinstance(schema, Mapping):
        return "any"
    one_of = _variants(schema, "oneOf")
    if one_of is not None:
        return _top_level_one_of(one_of, indent)
    type_value = schema.get("type")
    if isinstance(type_value, list):
        names = ["number" if t == "integer" else t for t in type_value if isinstance(t, str)]
        if names:
            return " | ".join(names)
    if isinstance(type_value, str):
        return _scalar(type_value, schema, indent)
    any_of = _variants(schema, "anyOf")
    if any_of is not None and any_of:
        return _inline_union(any_of, indent)
    return "any"


def text_lines(text: str) -> list[str]:
    """Lines split on "\n" only, a trailing "\r" removed, no empty last line (Rust `lines`)."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def namespace_section(namespace: ToolNamespaceConfig) -> str:
    """The `## name` section of one tool namespace."""
    lines = [f"## {namespace.name}\n"]
    has_tools = bool(namespace.tools)
    if namespace.description is not None:
        for line in text_lines(namespace.description):
            lines.append(f"// {line}" if has_tools else line)
    if has_tools:
        lines.append(f"namespace {namespace.name} {{\n")
        for tool in namespace.tools:
            lines.extend(f"// {line}" for line in text_lines(tool.description))
            if tool.parameters is not None:
                params = to_typescript(tool.parameters)
                lines.append(f"type {tool.name} = (_: {params}) => any;\n")
            else:
                lines.append(f"type {tool.name} = () => any;\n")
        lines.append(f"}} // namespace {namespace.name}")
    return "\n".join(lines)


def tools_section(tools: Mapping[str, ToolNamespaceConfig]) -> str:
    """The `# Tools` section: every namespace, ordered by its key."""
    sections = ["# Tools"]
    sections.extend(namespace_section(tools[name]) for name in sorted(tools))
    return "\n\n".join(sections)
