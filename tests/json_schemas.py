"""The JSON-mode schema suite: 32 schemas of growing difficulty."""

from __future__ import annotations

from typing import Any

S = str


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required is not None:
        out["required"] = required
    return out


SHORT = {"type": "string", "maxLength": 12}
SCHEMAS: dict[str, dict[str, Any]] = {
    "01_any_object": {"type": "object"},
    "02_one_string": obj({"name": SHORT}, ["name"]),
    "03_int_bounds": obj({"n": {"type": "integer", "minimum": 1, "maximum": 5}}, ["n"]),
    "04_number_bounds": obj({"x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}, ["x"]),
    "05_boolean": obj({"ok": {"type": "boolean"}}, ["ok"]),
    "06_enum": obj({"unit": {"enum": ["celsius", "fahrenheit"]}}, ["unit"]),
    "07_const": obj({"kind": {"const": "weather"}, "v": {"type": "integer"}}, ["kind", "v"]),
    "08_null": obj({"nothing": {"type": "null"}}, ["nothing"]),
    "09_optional_mix": obj({"a": SHORT, "b": {"type": "integer"}, "c": {"type": "boolean"}}, ["a"]),
    "10_no_additional": obj({"a": {"type": "integer"}}, ["a"], additionalProperties=False),
    "11_array_bounds": obj({"xs": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4}}, ["xs"]),
    "12_array_of_enum": obj({"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}}, ["tags"]),
    "13_nested_object": obj({"user": obj({"name": SHORT, "age": {"type": "integer", "minimum": 0, "maximum": 150}}, ["name", "age"])}, ["user"]),
    "14_array_of_objects": obj({"items": {"type": "array", "maxItems": 3, "items": obj({"id": {"type": "integer"}, "qty": {"type": "integer", "minimum": 1}}, ["id", "qty"], additionalProperties=False)}}, ["items"]),
    "15_anyof": obj({"v": {"anyOf": [{"type": "integer"}, SHORT]}}, ["v"]),
    "16_oneof_objects": obj({"shape": {"oneOf": [obj({"r": {"type": "number"}}, ["r"], additionalProperties=False), obj({"w": {"type": "integer"}, "h": {"type": "integer"}}, ["w", "h"], additionalProperties=False)]}}, ["shape"]),
    "17_ref_defs": {"$defs": {"point": obj({"x": {"type": "integer"}, "y": {"type": "integer"}}, ["x", "y"], additionalProperties=False)}, **obj({"a": {"$ref": "#/$defs/point"}, "b": {"$ref": "#/$defs/point"}}, ["a", "b"])},
    "18_recursive_ref": {"$defs": {"node": obj({"v": {"type": "integer"}, "kids": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}}}, ["v"])}, "$ref": "#/$defs/node"},
    "19_pattern": obj({"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}}, ["code"]),
    "20_format_date": obj({"day": {"type": "string", "format": "date"}}, ["day"]),
    "21_format_email": obj({"mail": {"type": "string", "format": "email"}}, ["mail"]),
    "22_string_lengths": obj({"s": {"type": "string", "minLength": 2, "maxLength": 5}}, ["s"]),
    "23_multiple_types": obj({"v": {"type": ["integer", "boolean"]}}, ["v"]),
    "24_nullable": obj({"v": {"type": ["string", "null"], "maxLength": 8}}, ["v"]),
    "25_dict_of_ints": obj({"counts": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 3}}, ["counts"]),
    "26_pattern_properties": obj({"env": {"type": "object", "patternProperties": {"^[A-Z]+$": {"type": "integer"}}, "additionalProperties": False, "maxProperties": 2}}, ["env"]),
    "27_tuple_prefix_items": obj({"pair": {"type": "array", "prefixItems": [{"type": "integer"}, SHORT], "items": False}}, ["pair"]),
    "28_allof": obj({"v": {"allOf": [{"type": "integer"}, {"minimum": 3}, {"maximum": 9}]}}, ["v"]),
    "29_deep_nesting": obj({"a": obj({"b": obj({"c": obj({"d": {"enum": [1, 2, 3]}}, ["d"])}, ["c"])}, ["b"])}, ["a"]),
    "30_many_required": obj({k: {"type": "integer", "minimum": 0, "maximum": 9} for k in "abcdefgh"}, list("abcdefgh"), additionalProperties=False),
    "31_mixed_array": obj({"xs": {"type": "array", "maxItems": 4, "items": {"anyOf": [{"type": "integer"}, {"type": "boolean"}, {"type": "null"}]}}}, ["xs"]),
    "32_invoice": obj({
        "id": {"type": "string", "pattern": "^INV-[0-9]{4}$"},
        "currency": {"enum": ["EUR", "USD"]},
        "lines": {"type": "array", "minItems": 1, "maxItems": 2, "items": obj({"sku": SHORT, "qty": {"type": "integer", "minimum": 1, "maximum": 9}, "price": {"type": "number", "minimum": 0, "maximum": 1000}}, ["sku", "qty", "price"], additionalProperties=False)},
        "paid": {"type": "boolean"},
    }, ["id", "currency", "lines"], additionalProperties=False),
}
