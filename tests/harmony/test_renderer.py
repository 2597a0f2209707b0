"""The renderer against openai-harmony: golden files and a differential test (≥150 cases)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from app.domain.messages import Conversation, Message, Role
from app.harmony import encoding as enc
from app.harmony.renderer import RenderConfig, Renderer, RenderMode, normalize_history
from tests.fixed_conversations import fixed_conversations
from tests.oracle import MODES, reference_render
from tests.strategies import conversations

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden").glob("*.json"))


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_files(path: Path, renderer: Renderer) -> None:
    payload = json.loads(path.read_text())
    conversation = Conversation.from_dict(payload["conversation"])
    assert len(payload["rendered"]) == 6
    for key, expected in payload["rendered"].items():
        mode, _, keep = key.partition("+")
        tokens = renderer.render(conversation, RenderMode(mode), config=RenderConfig(not keep))
        assert tokens == expected["tokens"], key
        assert renderer.encoding.decode(tokens) == expected["text"]


def test_golden_files_cover_every_fixed_conversation() -> None:
    assert {p.stem for p in GOLDEN} == set(fixed_conversations())


@pytest.mark.parametrize("name", sorted(fixed_conversations()))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("keep", [False, True])
def test_fixed_conversations_match_reference(
    name: str, mode: RenderMode, keep: bool, renderer: Renderer, oracle: Any
) -> None:
    conversation = fixed_conversations()[name]
    ours = renderer.render(conversation, mode, config=RenderConfig(auto_drop_analysis=not keep))
    assert ours == reference_render(oracle, conversation, mode, keep)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations())
def test_generated_conversations_match_reference(
    conversation: Conversation, renderer: Renderer, oracle: Any
) -> None:
    for mode in MODES:
        for keep in (False, True):
            ours = renderer.render(conversation, mode, config=RenderConfig(not keep))
            assert ours == reference_render(oracle, conversation, mode, keep), (mode, keep)


def test_control_token_text_in_user_and_tool_messages_stays_text(renderer: Renderer) -> None:
    conversation = fixed_conversations()["injection"]
    tokens = renderer.render(conversation, RenderMode.PLAIN)
    specials = [t for t in tokens if t >= enc.START_OF_TEXT]
    # Exactly the three messages' framing: <|start|> <|message|> <|end|> (+ <|channel|> for the tool).
    assert specials.count(enc.START) == 3
    assert specials.count(enc.END) == 3
    assert enc.RETURN not in tokens and enc.CALL not in tokens
    assert "You are evil" in renderer.encoding.decode(tokens)


def test_assistant_tool_call_ends_with_call_and_final_with_end(renderer: Renderer) -> None:
    call = Message.of(Role.ASSISTANT, "{}", channel="commentary", recipient="functions.f")
    final = Message.of(Role.ASSISTANT, "done", channel="final")
    assert renderer.render_message(call)[-1] == enc.CALL
    assert renderer.render_message(final)[-1] == enc.END
    training = renderer.render(Conversation(messages=(final,)), RenderMode.TRAINING)
    assert training[-1] == enc.RETURN


def test_analysis_dropped_after_final_and_kept_in_tool_chain(renderer: Renderer) -> None:
    convs = fixed_conversations()
    answered = renderer.encoding.decode(renderer.render(convs["tool_chain_answered"]))
    assert "Need to use the tool." not in answered
    assert "It is sunny." not in answered  # before the first final: dropped too
    chain = renderer.encoding.decode(renderer.render(convs["tool_chain"]))
    assert "Need to use the tool." in chain
    kept = renderer.render(convs["tool_chain_answered"], config=RenderConfig(auto_drop_analysis=False))
    assert "Need to use the tool." in renderer.encoding.decode(kept)


def test_trailing_return_in_history_is_normalised() -> None:
    assert normalize_history([1, 2, enc.RETURN]) == [1, 2, enc.END]
    assert normalize_history([1, enc.CALL]) == [1, enc.CALL]
    assert normalize_history([]) == []


def test_tool_message_without_name_is_a_clear_error(renderer: Renderer) -> None:
    from app.errors import RenderError

    bad = Conversation(messages=(Message.of(Role.TOOL, "x"),))
    with pytest.raises(RenderError, match="tool's name"):
        renderer.render(bad)
