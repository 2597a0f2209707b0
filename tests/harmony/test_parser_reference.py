"""The parser against openai-harmony on well-formed completions (strict and tolerant modes)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.domain.messages import Message
from app.harmony.encoding import HarmonyEncoding
from app.harmony.parser import parse_tokens
from app.harmony.renderer import Renderer
from tests.fixed_conversations import fixed_conversations
from tests.oracle import reference_parse, wire_form
from tests.strategies import assistant_messages, special_heavy_tokens


def completion_tokens(renderer: Renderer, messages: list[Message]) -> list[int]:
    """What the model would generate after `<|start|>assistant` for these messages."""
    tokens: list[int] = []
    for message in messages:
        tokens.extend(renderer.render_message(message))
    tokens = tokens[2:]  # drop the first `<|start|>assistant`: the prompt already has it
    if messages[-1].channel == "final":
        tokens[-1] = 200002  # the model ends its answer with <|return|>
    return tokens


def ours(tokens: list[int], strict: bool, role: str | None = "assistant") -> list[dict[str, Any]]:
    from app.domain.messages import Role

    result = parse_tokens(tokens, strict=strict, role=None if role is None else Role(role))
    return [wire_form(m.to_dict()) for m in result.messages]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=assistant_messages())
def test_completions_parse_like_the_reference(messages: list[Message], renderer: Renderer, oracle: Any) -> None:
    tokens = completion_tokens(renderer, messages)
    expected = reference_parse(oracle, tokens)
    assert isinstance(expected, list)
    assert ours(tokens, strict=True) == expected
    assert ours(tokens, strict=False) == expected


@pytest.mark.parametrize("name", ["tool_chain", "tool_chain_answered", "finished_turn", "two_turns", "injection"])
def test_whole_conversations_parse_like_the_reference(name: str, renderer: Renderer, oracle: Any) -> None:
    conversation = fixed_conversations()[name]
    messages = [m for m in conversation.messages if m.author.role.value != "system"]
    messages = [m for m in messages if m.author.role.value != "developer"]
    tokens: list[int] = []
    for m in messages:
        tokens.extend(renderer.render_message(m))
    expected = reference_parse(oracle, tokens, role=None)
    assert isinstance(expected, list)
    assert ours(tokens, strict=True, role=None) == expected
    assert ours(tokens, strict=False, role=None) == expected


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=special_heavy_tokens, role=st.sampled_from(["assistant", None]))
@example(tokens=[200008, 200018], role="assistant")  # id 200018 as content: named as the app names it
@example(tokens=[216, 200008], role="assistant")  # a header "\x1c": a word to Rust, a space to Python
def test_strict_mode_agrees_with_reference_wherever_it_accepts(
    tokens: list[int], role: str | None, oracle: Any, encoding: HarmonyEncoding
) -> None:
    expected = reference_parse(oracle, tokens, role=role)
    got = ours(tokens, strict=True, role=role)
    if isinstance(expected, list):
        assert got == expected


def test_w38_strict_keeps_reference_reading_tolerant_fixes_it(encoding: HarmonyEncoding, oracle: Any) -> None:
    tokens = encoding.encode_with_specials('<|channel|>final <|constrain|>json<|message|>{"a":1}<|return|>')
    expected = reference_parse(oracle, tokens)
    assert isinstance(expected, list) and expected[0]["recipient"] == "<|constrain|>json"
    assert ours(tokens, strict=True) == expected
    tolerant = ours(tokens, strict=False)[0]
    assert "recipient" not in tolerant and tolerant["content_type"] == "<|constrain|>json"
