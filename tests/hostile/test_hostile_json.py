"""Hostile JSON-mode schemas cannot hold the engine (V15/V16).

A schema whose smallest answer cannot fit the token budget is refused at request time with a
`SchemaError`, quickly and in little memory; JSON mode's closer is bounded whatever the
schema asks for; a generation past its deadline ends as a `TurnFailed` and the worker answers
the next request. The hostile schemas are built here.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from app.constrain.close import closings
from app.constrain.closing import Closer, plan_text
from app.constrain.constraint import JsonSchemaFormat, ResponseFormat, json_constraint
from app.constrain.minimal import smallest
from app.constrain.size import least_chars
from app.domain.events import GenerationDone, TurnFailed
from app.domain.sampling import Sampling
from app.engine.local.session import ChatSession
from app.errors import SchemaError
from app.templates.registry import get_template
from tests.turns import send


def _nested(count: int, depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "minItems": count}
    for _ in range(depth - 1):
        schema = {"type": "array", "minItems": count, "items": schema}
    return schema


HOSTILE = {
    "min_items_1e9": {"type": "array", "minItems": 1e9},
    "min_items_10e8_int": {"type": "array", "minItems": 1_000_000_000},
    "nested_1000_cubed": _nested(1000, 3),
}


def _format(schema: dict[str, Any]) -> ResponseFormat:
    return ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(schema=schema))


def _measured(work: Any) -> tuple[Any, float, int]:
    """What `work()` returns or raises, the seconds it took and the peak bytes it allocated."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result: Any = work()
    except SchemaError as exc:
        result = exc
    finally:
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, seconds, peak


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_constraint_builder_refuses_a_hostile_schema_quickly(name: str) -> None:
    refused, seconds, peak = _measured(lambda: json_constraint(HOSTILE[name], max_tokens=8))
    assert isinstance(refused, SchemaError), refused
    assert "minItems" in refused.message, refused.message
    assert seconds < 2 and peak < 20_000_000, (seconds, peak)


def test_a_schema_whose_smallest_answer_outgrows_the_budget_is_refused() -> None:
    schema = {"type": "object", "required": ["items"],
              "properties": {"items": {"type": "array", "minItems": 400, "items": {"type": "integer"}}}}
    with pytest.raises(SchemaError, match="max_tokens 8"):
        json_constraint(schema, max_tokens=8)
    assert json_constraint(schema, max_tokens=1000).grammar  # it fits a larger budget


def test_the_lower_bound_counts_without_building() -> None:
    assert least_chars({"type": "array", "minItems": 3}) == len("[0,0,0]")
    assert least_chars({"type": "object", "required": ["ab"]}) == len('{"ab":0}')
    assert least_chars({"type": "string", "minLength": 4}) == len('"aaaa"')
    assert least_chars(_nested(1000, 3)) > 10**9
    assert least_chars({"anyOf": [{"type": "string", "minLength": 50}, {"type": "null"}]}) == 4


def test_the_closer_is_bounded_in_time_and_memory() -> None:
    """A schema under every cap whose smallest value is still large (8 million items): the
    closer proposes nothing rather than building it."""
    schema = _nested(200, 3)

    def work() -> Any:
        closer = Closer(plan_text(schema, harmony=False), lambda t: list(range(len(t))), lambda t: b"[", 0)
        return smallest(schema), closings("[[", schema), closer.endings([1, 1])

    (value, endings, proposed), seconds, peak = _measured(work)
    assert value is None and endings == [] and proposed == []
    assert seconds < 2 and peak < 20_000_000, (seconds, peak)


def test_the_closer_gives_up_when_the_request_is_cancelled() -> None:
    schema = {"type": "array", "minItems": 5000, "items": {"type": "object", "required": ["a"]}}
    asked: list[bool] = []

    def cancelled() -> bool:
        asked.append(True)
        return True

    assert closings("[", schema, stop=cancelled) == [] and asked


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_session_refuses_a_hostile_schema_and_the_worker_answers_next(
    name: str, smollm_client: Any
) -> None:
    session = ChatSession(smollm_client, get_template("chatml"), sampling=Sampling(temperature=0.0), max_tokens=8)
    refused, seconds, peak = _measured(
        lambda: list(send(session, "A JSON array, please.", response_format=_format(HOSTILE[name]), max_tokens=8))
    )
    assert isinstance(refused, SchemaError), refused
    assert seconds < 2 and peak < 20_000_000, (seconds, peak)
    events = list(send(session, "Say hello.", max_tokens=8))
    assert any(isinstance(e, GenerationDone) for e in events), events


def test_a_generation_past_its_deadline_fails_and_frees_the_worker(smollm_client: Any) -> None:
    prompt = smollm_client.tokenize("Count from one to one thousand: one, two, three,", False)
    events = list(smollm_client.generate(prompt, stop_ids=(), max_tokens=1500, deadline_s=0.3))
    failed = events[-1]
    assert isinstance(failed, TurnFailed) and "deadline" in failed.reason, failed
    assert not any(isinstance(e, GenerationDone) for e in events)
    after = list(smollm_client.generate(prompt, stop_ids=(), max_tokens=4))
    assert isinstance(after[-1], GenerationDone) and after[-1].timings.generated == 4, after[-1]
