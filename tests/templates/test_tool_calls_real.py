"""Forced tool calls on real llama.cpp models of each family: the bundled SmolLM2 (Hermes
calls), and tiny random-weight GGUFs of Qwen 3, Llama 3.1 and Mistral NeMo carrying their real
tokenizers and official templates. The call's name and arguments are held by the token mask
from the first token, so even random weights write a call that parses, validates, runs and
is answered; the prompt the model reads declares the tool in its family's own markup."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from pydantic import Field

from app.domain.events import ToolsRan, TurnResult
from app.domain.messages import Role
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.library.bundled import default_model_path
from app.templates.calls.format import declared_tools
from app.templates.registry import get_template, template_names
from app.tools.api import tool
from app.tools.registry import ToolRegistry
from tests import tiny_models
from tests.turns import tool_turn


@tool
def square(n: Annotated[int, Field(ge=0, le=99)]) -> int:
    """The square of a whole number from 0 to 99."""
    return n * n


CASES = {  # model: the built-in template that speaks its family's calls
    "smollm2": "smollm2",
    "qwen3": "qwen",
    "llama3": "llama-3",
    "mistral": "mistral",
}


@pytest.fixture(scope="module", params=list(CASES))
def family(request: Any) -> Iterator[tuple[str, WorkerClient]]:
    name = request.param
    if CASES[name] not in template_names():
        pytest.fail(f"no built-in template {CASES[name]!r} for {name}")
    path = default_model_path() if name == "smollm2" else tiny_models.build(name)
    client = WorkerClient()
    client.load(path, n_ctx=2048, n_threads=1)
    yield name, client
    client.close()


def _turn(client: WorkerClient, template: str, choice: str) -> tuple[ChatSession, list[Any]]:
    session = ChatSession(client, get_template(template), sampling=Sampling(temperature=0.8, seed=7),
                          max_tokens=60, thinking_budget=8)  # a thinking family's think block: capped
    events = list(tool_turn(session, "What is the square of 7?", ToolRegistry([square]),
                                tool_choice=choice, max_calls=3))
    return session, events


@pytest.mark.parametrize("choice", ["required", "square"])
def test_a_forced_call_parses_validates_runs_and_is_answered(family: tuple[str, WorkerClient], choice: str) -> None:
    name, client = family
    session, events = _turn(client, CASES[name], choice)
    result = events[-1]
    assert isinstance(result, TurnResult), events[-3:]
    assert result.records, [e for e in events if not isinstance(e, TurnResult)][-5:]
    first = result.records[0]
    sent = json.loads(first.arguments_sent)
    assert first.tool == "functions.square" and isinstance(sent["n"], int) and 0 <= sent["n"] <= 99
    assert first.outcome.ok and first.outcome.content == sent["n"] ** 2
    assert any(isinstance(e, ToolsRan) for e in events)
    roles = [m.author.role for m in session.conversation.messages]
    assert Role.TOOL in roles and roles[-1] is Role.ASSISTANT  # the result went back; the model spoke after it
    assert declared_tools(session.conversation)[0].name == "square"
