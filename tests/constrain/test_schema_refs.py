"""Tool schemas with `$ref` (the 22 shapes of tests/fixtures/schema_refs.json: `$defs`,
`definitions`, nested definitions, recursion — a tree, the root, two definitions, any JSON value,
a list —, references in `anyOf`/`oneOf`/`allOf`/arrays, siblings in 2020-12 and draft 7,
pointers, anchors, escaped names, pydantic's and zod's shapes, a missing definition, a recursion
that never ends): written out with the same meaning, held by the call grammar of every call
format (the arguments that fit accepted, the shapes it refuses refused), or left unconstrained
with the reason — never an error that would fail the turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import llguidance
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import validators
from llguidance.tiktoken import lltokenizer_from_encoding

from app.constrain.call_schema import call_schema
from app.domain.schema_refs import MAX_NODES, resolve_refs
from app.errors import SchemaError
from app.harmony import encoding as enc
from app.harmony.schema_ts import to_typescript
from app.templates.calls.format import ToolCall
from app.templates.calls.formats import FORMATS
from app.templates.calls.grammar import call_grammar
from app.templates.harmony_grammar import harmony_constraint

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema_refs.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["cases"]
RESOLVED = [c for c in CASES if c["name"] != "missing_definition"]
HELD = [c for c in CASES if c["held"]]


def _ids(case: dict[str, Any]) -> str:
    return str(case["name"])


def _valid(schema: Any, value: Any) -> bool:
    return bool(validators.validator_for(schema)(schema).is_valid(value))


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


@pytest.fixture(scope="module")
def lltok() -> Any:
    return lltokenizer_from_encoding(enc.load_encoding()._tik, n_vocab=enc.N_VOCAB, eos_token=enc.RETURN)


def _accepts(lltok: Any, grammar: str, text: str) -> bool:
    matcher = llguidance.LLMatcher(lltok, grammar, log_level=0)
    ids = enc.load_encoding().encode_with_specials(text)
    return bool(matcher.consume_tokens(ids)) and not matcher.is_error() and matcher.is_accepting()


def test_the_corpus_has_twenty_schemas_with_refs_and_their_examples_are_right() -> None:
    assert len(CASES) >= 20 and all(_refs(c["schema"]) for c in CASES)
    for case in CASES:
        if case["name"] == "missing_definition":
            continue
        assert all(_valid(case["schema"], v) for v in case["valid"]), case["name"]
        assert not any(_valid(case["schema"], v) for v in case["invalid"]), case["name"]


@pytest.mark.parametrize("case", RESOLVED, ids=_ids)
def test_written_out_references_keep_the_meaning(case: dict[str, Any]) -> None:
    schema = case["schema"]
    before = json.dumps(schema, sort_keys=True)
    out = resolve_refs(schema)
    assert json.dumps(schema, sort_keys=True) == before  # the input is never modified
    for value in case["valid"] + case["invalid"] + case["grammar_rejects"]:
        assert _valid(out, value) is _valid(schema, value), (value, out)
    left = _refs(out)
    defs = out.get("$defs", out.get("definitions", {}))
    assert bool(left) is case["recursive"], left  # only recursion stays a reference
    assert all(r.split("/")[-1] in defs and r.startswith(("#/$defs/", "#/definitions/")) for r in left)
    assert resolve_refs(out) == out  # written out once is written out


def test_a_schema_without_references_comes_back_equal_and_the_gaps_are_named() -> None:
    plain = {"type": "object", "properties": {"a": {"type": "string", "default": {"$ref": "data"}}}}
    assert resolve_refs(plain) == plain
    missing = next(c for c in CASES if c["name"] == "missing_definition")["schema"]
    with pytest.raises(SchemaError, match=r"not there: #/\$defs/Gone \(at /properties/v\)"):
        resolve_refs(missing)
    with pytest.raises(SchemaError, match="no anchor 'nope'"):
        resolve_refs({"properties": {"a": {"$ref": "#nope"}}})


def test_what_cannot_be_resolved_here_is_left_as_it_is() -> None:
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    dynamic = {"$defs": {"T": {"$dynamicAnchor": "t"}}, "properties": {"a": {"$dynamicRef": "#t"}, "b": {"$ref": "#/$defs/T"}}}
    rebased = {"$defs": {"T": {"$id": "inner", "type": "string"}}, "properties": {"b": {"$ref": "#/$defs/T"}}}
    for schema in (remote, dynamic, rebased):
        assert resolve_refs(schema) == schema
    assert call_schema(remote).schema is None and "remote document" in call_schema(remote).reason
    # definitions that fan out (each used twice by the one before) are not multiplied out...
    fan = {f"D{i}": {"type": "array", "prefixItems": [{"$ref": f"#/$defs/D{i + 1}"}, {"$ref": f"#/$defs/D{i + 1}"}]} for i in range(24)}
    fan["D24"] = {"type": "integer"}
    wide = {"type": "object", "$defs": fan, "properties": {"x": {"$ref": "#/$defs/D0"}}}
    assert MAX_NODES < 2**24 and resolve_refs(wide) == wide
    assert call_schema(wide).schema == wide and not call_schema(wide).reason  # ...the engine follows them


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_each_schema_is_held_or_left_unconstrained_with_a_notice(case: dict[str, Any]) -> None:
    held = call_schema(case["schema"])
    if case["held"]:
        assert held.schema is not None and held.reason == "" and held.notice("functions.t") == ""
        return
    assert held.schema is None and held.reason
    said = held.notice("functions.t")
    assert "functions.t" in said and held.reason in said and "checked against the schema" in said


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_every_call_format_builds_the_turn_grammar(case: dict[str, Any]) -> None:
    tools = {"t": call_schema(case["schema"]).schema, "other": {"type": "object", "properties": {}}}
    harmony_constraint(None, tools=tools, tool_choice="auto")
    harmony_constraint(None, tools=tools, tool_choice="t")
    for fmt in FORMATS.values():
        assert call_grammar(fmt, tools, "required") is not None
        assert call_grammar(fmt, tools, "auto") is not None


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("case", HELD, ids=_ids)
def test_the_grammar_takes_the_arguments_that_fit_and_refuses_the_wrong_shapes(lltok: Any, case: dict[str, Any]) -> None:
    fmt = FORMATS["hermes"]
    constraint = call_grammar(fmt, {"t": call_schema(case["schema"]).schema}, "required")
    assert constraint is not None

    def written(value: Any) -> str:
        return "".join(p.text for p in fmt.write([ToolCall("t", _compact(value))]))

    for value in case["valid"]:
        assert _accepts(lltok, constraint.grammar, written(value)), value
    for value in case["grammar_rejects"]:
        assert not _accepts(lltok, constraint.grammar, written(value)), value


def test_a_recursive_parameter_is_held_in_qwen_xml_calls(lltok: Any) -> None:
    tree = next(c for c in CASES if c["name"] == "recursive_tree")
    constraint = call_grammar(FORMATS["qwen3-coder"], {"t": call_schema(tree["schema"]).schema}, "required")
    assert constraint is not None
    call = "<tool_call>\n<function=t>\n<parameter=root>\n{}\n</parameter>\n</function>\n</tool_call>"
    good = call.format(_compact(tree["valid"][1]["root"]))
    assert _accepts(lltok, constraint.grammar, good)
    assert not _accepts(lltok, constraint.grammar, call.format(_compact(tree["invalid"][0]["root"])))


def test_the_model_reads_what_a_reference_stood_for() -> None:
    defs = next(c for c in CASES if c["name"] == "defs_object")["schema"]
    assert "at: any" in to_typescript(defs)  # what gpt-oss was shown of a $ref before
    shown = to_typescript(resolve_refs(defs))
    assert "x: number" in shown and "y: number" in shown and "any" not in shown


_NAMES = ("A", "B", "C")
_SCALARS = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "null"}, {"enum": [1, "a"]}])


def _part(depth: int = 0) -> st.SearchStrategy[Any]:
    """A subschema of the generated definitions: a scalar, a reference, or a container of them."""
    ref = st.sampled_from(_NAMES).map(lambda n: {"$ref": f"#/$defs/{n}"})
    leaf = st.one_of(_SCALARS, ref, st.tuples(ref, st.integers(0, 3)).map(lambda r: {**r[0], "maxLength": r[1]}))
    if depth >= 2:
        return leaf
    inner = st.deferred(lambda: _part(depth + 1))
    return st.one_of(
        leaf,
        _container(inner),
        st.lists(inner, min_size=1, max_size=2).map(lambda alts: {"anyOf": [*alts, {"type": "null"}]}),
    )


def _container(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """An object or an array around parts (a definition is one: its recursion is guarded)."""
    return st.one_of(
        st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2).map(lambda p: {"type": "object", "properties": p}),
        inner.map(lambda i: {"type": "array", "items": i, "maxItems": 3}),
    )


_JSON = st.recursive(
    st.none() | st.integers(-2, 2) | st.sampled_from(["", "a", "abcd"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), kids, max_size=2),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({n: _container(_part(1)) for n in _NAMES}), _part(), st.lists(_JSON, min_size=1, max_size=6))
def test_written_out_references_agree_with_the_original_on_any_value(defs: dict[str, Any], root: Any, values: list[Any]) -> None:
    schema = {"$defs": defs, "type": "object", "properties": {"x": root}}
    out = resolve_refs(schema)
    for value in values:
        assert _valid(out, {"x": value}) is _valid(schema, {"x": value}), (value, out)
