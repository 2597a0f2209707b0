"""JSON mode beyond what the grammar enforces: each widened keyword broken by a first attempt
and repaired by the retry (a scripted source that writes whatever it is told, so the check
after is the only guard), the same on the real default model, answers always finished within
`max_tokens` on real models, and the command line's exit codes with nothing but valid JSON on
stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.constrain.close import closing
from app.constrain.constraint import Constraint, JsonSchemaFormat, ResponseFormat, validate_json
from app.constrain.minimal import smallest
from app.constrain.plan import plan
from app.domain.events import GenerationDone, GenerationEvent, JsonChecked, JsonRetried, MessageDone
from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.errors import ErrorCode
from app.templates.registry import get_template
from tests.turns import send

ROOT = Path(__file__).resolve().parents[2]
HEAD = "<|channel|>final<|message|>"


def _format(schema: dict[str, Any]) -> ResponseFormat:
    return ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(name="t", schema=schema))


class Repairing(ScriptedClient):
    """Writes `broken` first; each retry carries on from the kept tokens towards the next of
    `fixed` (the last one again once they run out) — it asserts the kept answer is a prefix
    of that target, i.e. the retry backed up to before the offending value (or member)."""

    def __init__(self, broken: str, *fixed: str) -> None:
        super().__init__([])
        self.broken, self.fixed = broken, fixed
        self.kept: list[str] = []
        self.bans: list[tuple[int, ...]] = []

    def generate(self, prompt_ids: Sequence[int], **kw: Any) -> Iterator[GenerationEvent]:
        constraint = kw.get("constraint")
        assert isinstance(constraint, Constraint)
        first = self.encoding.encode_with_specials(HEAD + self.broken + "<|return|>")
        if not constraint.consumed:
            self._scripts, self.written = [first], first
        else:
            consumed = list(constraint.consumed)
            assert list(prompt_ids[-len(consumed) :]) == consumed
            body = self.encoding.decode(consumed).split("<|message|>", 1)[1]
            target = self.fixed[min(len(self.kept), len(self.fixed) - 1)]
            assert target.startswith(body), (body, target)
            if consumed == self.written[: len(consumed)]:
                assert self.written[len(consumed)] in constraint.banned  # the earlier choice, excluded
            else:  # a token re-spelt to end where the member began: all that open like it are excluded
                assert len(constraint.banned) > 1
            self.kept.append(body)
            self.bans.append(constraint.banned)
            rest = self.encoding.encode_with_specials(target[len(body) :] + "<|return|>")
            self._scripts, self.written = [rest], consumed + rest
        yield from super().generate(prompt_ids, **kw)


CASES = {
    "oneOf": ({"properties": {"x": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}}},
              '{"x":3}', '{"x":2.5}', "/x"),
    "format": ({"properties": {"v": {"type": "string", "format": "semver"}}}, '{"v":"one"}', '{"v":"1.0.0"}', "/v"),
    "not": ({"properties": {"n": {"type": "integer", "not": {"const": 0}}}}, '{"n":0}', '{"n":7}', "/n"),
    "uniqueItems": ({"properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}},
                    '{"tags":["a","a"]}', '{"tags":["a","b"]}', "/tags"),
    "if/then": ({"properties": {"kind": {"type": "string"}, "size": {"type": "integer"}},
                 "if": {"properties": {"kind": {"const": "box"}}, "required": ["kind"]}, "then": {"required": ["size"]}},
                '{"kind":"box"}', '{"kind":"box","size":3}', ""),
    "dependentRequired": ({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                           "dependentRequired": {"a": ["b"]}}, '{"a":1}', '{"a":1,"b":2}', ""),
    "dependencies": ({"$schema": "http://json-schema.org/draft-07/schema#",
                      "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "dependencies": {"a": ["b"]}},
                     '{"a":1}', '{"a":1,"b":2}', ""),
    "contains": ({"properties": {"xs": {"type": "array", "items": {"type": "integer"}, "contains": {"const": 5}}}},
                 '{"xs":[1]}', '{"xs":[1,5]}', "/xs"),
    "minProperties": ({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 2},
                      '{"a":1}', '{"a":1,"b":2}', ""),
    "propertyNames": ({"propertyNames": {"maxLength": 3}, "additionalProperties": {"type": "integer"}},
                      '{"long":1}', '{"ok":1}', ""),
    "pattern": ({"properties": {"p": {"type": "string", "pattern": "^(?!x)"}}}, '{"p":"xy"}', '{"p":"yy"}', "/p"),
}


@pytest.mark.parametrize("keyword", sorted(CASES))
def test_a_widened_keyword_broken_by_the_first_attempt_is_repaired_by_the_retry(keyword: str) -> None:
    body, broken, fixed, path = CASES[keyword]
    schema = {"type": "object", **body}
    found = plan(schema)
    assert not found.full and not found.fallback, found  # the grammar does not enforce it: checked after
    assert keyword.split("/")[0] in " ".join(found.checked_after())
    client = Repairing(broken, fixed)
    session = ChatSession(client, get_template("harmony"), max_tokens=200)  # type: ignore[arg-type]
    events = list(send(session, "Answer in JSON.", response_format=_format(schema)))
    retried = [e for e in events if isinstance(e, JsonRetried)]
    (check,) = [e for e in events if isinstance(e, JsonChecked)]
    assert len(retried) == 1 and retried[0].path == path and retried[0].kept == client.kept[0]
    assert check.result.valid and check.result.value == json.loads(fixed), check.result
    assert session.conversation.messages[-1].text == fixed  # the history holds the repaired answer
    assert not validate_json(broken, schema).valid


def test_an_answer_no_retry_repairs_is_reported_with_its_path_and_keyword() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "not": {"const": 0}}}}
    client = Repairing('{"n":0}', '{"n":0}')  # always 0 again, whatever was taken back
    session = ChatSession(client, get_template("harmony"), max_tokens=200)  # type: ignore[arg-type]
    events = list(send(session, "Answer in JSON.", response_format=_format(schema)))
    assert [e.attempt for e in events if isinstance(e, JsonRetried)] == [1, 2, 3]
    assert client.kept[:2] == ['{"n":', '{"n":'] and len(client.kept) == 3  # the value twice, then …
    assert '"n"' not in client.kept[2]  # … the member itself
    (check,) = [e for e in events if isinstance(e, JsonChecked)]
    r = check.result
    assert not r.valid and r.code is ErrorCode.BODY_CONSTRAINT_VIOLATION and (r.path, r.keyword) == ("/n", "not")
    assert "not at /properties/n" in r.checked_after and "properties" in r.enforced


def test_a_member_no_value_can_repair_is_left_out_by_the_last_retry() -> None:
    """The grammar says a string; the conditional says null: no value written there passes,
    so after the retries at the value fail, the last one takes back the member itself (it is
    optional)."""
    schema = {"type": "object",
              "properties": {"mode": {"type": "string"}, "extra": {"type": "string"}},
              "if": {"properties": {"mode": {"const": "off"}}, "required": ["mode"]},
              "then": {"properties": {"extra": {"type": "null"}}}}  # fmt: skip
    broken = '{"mode":"off","extra":"x"}'
    client = Repairing(broken, '{"mode":"off","extra":"y"}', '{"mode":"off","extra":"z"}', '{"mode":"off"}')
    session = ChatSession(client, get_template("harmony"), max_tokens=200)  # type: ignore[arg-type]
    events = list(send(session, "Answer in JSON.", response_format=_format(schema)))
    retried = [(e.path, e.keyword, e.attempt) for e in events if isinstance(e, JsonRetried)]
    assert retried == [("/extra", "type", 1), ("/extra", "type", 2), ("/extra", "type", 3)]
    assert client.kept[:2] == ['{"mode":"off","extra":"'] * 2
    assert client.kept[2] == '{"mode":"off"'  # the member taken back whole, to its comma …
    assert {client.encoding.decode([t])[:1] for t in client.bans[2]} == {","}  # … and no comma after
    (check,) = [e for e in events if isinstance(e, JsonChecked)]
    assert check.result.valid and check.result.value == {"mode": "off"}, check.result
    assert not validate_json(broken, schema).valid


def test_each_violation_has_its_own_retries() -> None:
    """Two arrays, each with a duplicate no retry at the value repairs: each gets its retries
    at the value and then one at the item (six in all, more than one violation may take)."""
    unique = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    schema = {"type": "object", "properties": {"a": unique, "b": unique}}
    still, half = '{"a":["x","x"],"b":["y","y"]}', '{"a":["x"],"b":["y","y"]}'
    client = Repairing(still, still, still, half, half, half, '{"a":["x"],"b":["y"]}')
    session = ChatSession(client, get_template("harmony"), max_tokens=300)  # type: ignore[arg-type]
    events = list(send(session, "Answer in JSON.", response_format=_format(schema)))
    retried = [(e.path, e.attempt) for e in events if isinstance(e, JsonRetried)]
    assert retried == [("/a", 1), ("/a", 2), ("/a", 3), ("/b", 4), ("/b", 5), ("/b", 6)]
    (check,) = [e for e in events if isinstance(e, JsonChecked)]
    assert check.result.valid and check.result.value == {"a": ["x"], "b": ["y"]}, check.result


@pytest.mark.parametrize(
    "text, path, keyword, at_value, at_member",
    [('{"a":1, "b":"x"}', "/b", "type", '{"a":1, "b":"', '{"a":1'),
     ('{"b":"x","a":1}', "/b", "type", '{"b":"', "{"),
     ('{"t":["a","b","a"]}', "/t", "uniqueItems", '{"t":["a","b","', '{"t":["a","b"'),
     ('{"t":[5]}', "/t/0", "not", '{"t":[', '{"t":['),
     ('{"a":1}', "", "required", '{"a":1', '{"a":1')],
)  # fmt: skip
def test_where_a_retry_backs_up_to_at_the_value_and_then_at_the_member(
    text: str, path: str, keyword: str, at_value: str, at_member: str
) -> None:
    from app.constrain.spans import backup_offset

    value = json.loads(text)
    assert text[: backup_offset(text, value, path, keyword)] == at_value
    assert text[: backup_offset(text, value, path, keyword, wider=True)] == at_member


def test_the_retry_repairs_a_duplicate_on_the_real_default_model(smollm_client: Any) -> None:
    """SmolLM2, greedy: asked for "cat" twice, the first answer repeats it (uniqueItems is not in
    the grammar); the retry backs up to the second item's word, that choice excluded, and the
    answer validates."""
    schema = {"type": "array", "items": {"enum": ["cat", "dog"]}, "minItems": 2, "maxItems": 2, "uniqueItems": True}
    session = ChatSession(smollm_client, get_template("chatml"), sampling=Sampling(temperature=0.0), max_tokens=40)
    events = list(send(session, "Repeat the word cat twice as a JSON array.", response_format=_format(schema)))
    retried = [e for e in events if isinstance(e, JsonRetried)]
    (check,) = [e for e in events if isinstance(e, JsonChecked)]
    assert retried and {(r.keyword, r.path, r.kept) for r in retried} == {("uniqueItems", "", '["cat","')}
    assert check.result.valid and check.result.value == ["cat", "dog"], check.result
    assert session.conversation.messages[-1].text == '["cat","dog"]'


SCHEMA_LONG = {"type": "object", "properties": {
    "story": {"type": "string"},
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "meta": {"type": "object", "properties": {"author": {"type": "string"}, "tags": {"type": "array", "items": {
        "type": "string"}, "minItems": 2}}, "required": ["author", "tags"]}},
    "required": ["story", "grid", "meta"]}


STORY = {"type": "object", "properties": {
    "story": {"type": "string"}, "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}},
    "required": ["story", "grid"]}


@pytest.mark.parametrize("max_tokens, schema", [(16, STORY), (32, STORY), (64, STORY), (64, SCHEMA_LONG)])
def test_every_answer_is_finished_within_max_tokens_on_real_models(
    max_tokens: int, schema: dict[str, Any], smollm_client: Any, tiny_client: Any
) -> None:
    """A long string and nested arrays, temperature 1 so the models ramble: the budget still
    closes every answer, valid for the schema (SmolLM2, and the random-weight gpt-oss through
    its Harmony frame)."""
    for client, template in ((smollm_client, "chatml"), (tiny_client, "harmony")):
        for seed in range(3):
            session = ChatSession(client, get_template(template), sampling=Sampling(temperature=1.0, seed=seed),
                                  max_tokens=max_tokens)
            events = list(send(session, "Write a very long story, a grid of numbers and tags as JSON.",
                                       response_format=_format(schema)))
            (check,) = [e for e in events if isinstance(e, JsonChecked)]
            assert check.result.valid, (template, seed, check.result)
            done = [e for e in events if isinstance(e, GenerationDone)]
            assert sum(e.timings.generated for e in done[:1]) <= max_tokens
            generated = [t for e in events if isinstance(e, MessageDone) for t in e.token_ids]
            assert len(generated) <= max_tokens + 1  # the whole turn's tokens, the stop id too


def test_the_shortest_ending_of_cut_json() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "minLength": 2},
                                               "kind": {"enum": ["alpha", "beta"]},
                                               "xs": {"type": "array", "items": {"type": "integer"}, "minItems": 2}},
              "required": ["name", "kind", "xs"]}
    cases = {"": '{"name":"aa","kind":"beta","xs":[0,0]}', '{"na': 'me":"aa","kind":"beta","xs":[0,0]}',
             '{"name":"\\': 'na","kind":"beta","xs":[0,0]}', '{"name":"Bo","kind":"al': 'pha","xs":[0,0]}',
             '{"name":"Bo","kind":"beta","xs":[1,': "0]}", '{"name":"Bo","kind":"beta","xs":[-': "0,0]}"}
    for cut, ending in cases.items():
        assert closing(cut, schema) == ending, cut
        assert validate_json(cut + ending, schema).valid
    assert closing('{"name":"Bo","kind":"gamma', schema) is None  # no enum value starts so
    patterned = {"type": "object", "properties": {"id": {"type": "string", "pattern": r"^[A-Z]{2}-\d{3}$"},
                                                  "v": {"type": "string", "pattern": "^v[0-9]+\\.[0-9]+$"}},
                 "required": ["id", "v"]}
    assert closing("{", patterned) == '"id":"AA-000","v":"v0.0"}'
    assert validate_json("{" + str(closing("{", patterned)), patterned).valid
    either = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "anyOf": [{"properties": {"b": {"type": "string"}}, "required": ["b"]}, {"required": ["c"]}]}
    assert smallest(either) == '{"a":0,"c":0}'  # an alternative adds to what the schema requires


def _chat(model: Path, schema_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "chat", "--model", str(model), "--prompt", "Describe a user.",
         "--threads", "1", "--ctx", "1024", "--seed", "3", "--json-schema", str(schema_file), *extra],
        capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_the_command_line_prints_only_valid_json_and_exits_non_zero_otherwise(
    smollm_model: Any, tmp_path: Path
) -> None:
    schema_file = tmp_path / "user.json"
    schema_file.write_text(json.dumps(SCHEMA_LONG))
    short = _chat(smollm_model, schema_file, "--max-tokens", "32")  # closed within the budget
    assert short.returncode == 0 and "[json answer] valid" in short.stderr, short.stderr
    assert validate_json(short.stdout.strip(), SCHEMA_LONG).valid and short.stdout.count("\n") == 1
    cut = _chat(smollm_model, schema_file, "--max-tokens", "4")  # fewer than the shortest ending
    assert cut.returncode == 1 and cut.stdout == "" and "E-STREAM-TRUNCATED" in cut.stderr
    schema_file.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer", "not": {
        "type": "integer"}}}, "required": ["n"]}))  # satisfiable by no answer: every retry fails
    never = _chat(smollm_model, schema_file, "--max-tokens", "40")
    assert never.returncode == 1 and never.stdout == "" and "E-BODY-CONSTRAINT-VIOLATION" in never.stderr
    assert "[json retry 1] not at /n" in never.stderr


def test_free_strings_share_a_length_budgeted_from_max_tokens() -> None:
    from app.constrain.plan import budgeted

    schema = {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": ["string", "null"]}, "c": {"type": "string", "maxLength": 5},
        "d": {"type": "string", "enum": ["x"]}, "e": {"type": "string", "format": "date"}}}
    out = budgeted(plan(schema).generation, 100)
    props = out["properties"]
    assert props["a"]["maxLength"] == props["b"]["maxLength"] == 150  # 3 characters a token, two free strings
    assert props["c"]["maxLength"] == 5 and "maxLength" not in props["d"] and "maxLength" not in props["e"]
    assert budgeted(plan(schema).generation, None) == plan(schema).generation
    assert "maxLength" not in plan(schema).generation["properties"]["a"]  # the plan itself is untouched


def test_a_remote_endpoints_json_answer_gets_the_same_exact_check() -> None:
    """The endpoint enforced what it could (its `response_format`); formats and the rest are
    checked here exactly as for a local answer, and the card says the endpoint generated it."""
    from app.domain.endpoint import Endpoint
    from app.engine.local.scripted import ScriptedServer
    from app.engine.remote.session import RemoteSession

    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "semver"}}, "required": ["v"]}
    endpoint = Endpoint(name="remote", base_url="http://remote.invalid/v1", model="some-model")
    server = ScriptedServer([['{"v":', '"one"}'], ['{"v":"1.2.3"}']])
    session = RemoteSession(endpoint, None, client=server)
    bad = [e for e in send(session, "Version?", response_format=_format(schema)) if isinstance(e, JsonChecked)]
    good = [e for e in send(session, "Again?", response_format=_format(schema)) if isinstance(e, JsonChecked)]
    assert (bad[0].result.valid, bad[0].result.keyword, bad[0].result.path) == (False, "format", "/v")
    assert good[0].result.valid and good[0].result.checked_after == () == good[0].result.enforced
    assert server.bodies[0]["response_format"]["json_schema"]["schema"] == schema  # passed through as given
