"""Transcripts and Harmony conversations (HIP-1): identity round trips and what the model sees."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from app.domain.messages import Author, Conversation, Message, Role, TextContent
from app.harmony.encoding import HarmonyEncoding
from app.harmony.ocm.interop import from_conversation, to_conversation
from app.harmony.ocm.reader import read_transcript
from app.harmony.ocm.writer import write_transcript
from app.harmony.parser import parse_tokens
from app.harmony.renderer import Renderer, RenderMode
from tests.fixed_conversations import fixed_conversations
from tests.strategies import conversations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocm"


def single_content(conversation: Conversation) -> Conversation:
    """Messages with one content each (several text contents are joined by a transcript)."""
    out = []
    for m in conversation.messages:
        if len(m.content) > 1:
            m = m.model_copy(update={"content": (TextContent(text=m.text),)})
        out.append(m)
    return Conversation(messages=tuple(out))


def through_transcript(conversation: Conversation) -> Conversation:
    text = write_transcript(from_conversation(conversation))
    return to_conversation(read_transcript(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations().map(single_content))
def test_harmony_to_transcript_to_harmony_is_identity(conversation: Conversation, renderer: Renderer) -> None:
    back = through_transcript(conversation)
    assert back == conversation
    assert renderer.render(back, RenderMode.PLAIN) == renderer.render(conversation, RenderMode.PLAIN)


def test_fixed_conversations_survive_a_transcript(renderer: Renderer) -> None:
    for name, conversation in fixed_conversations().items():
        assert through_transcript(single_content(conversation)) == single_content(conversation), name


def test_ocm_only_attributes_never_reach_the_model(renderer: Renderer) -> None:
    t = read_transcript((FIXTURES / "03_concurrent_calls.ocm").read_text())
    text = renderer.encoding.decode(renderer.render(to_conversation(t), RenderMode.PLAIN))
    for attribute in ("call_id=", "intent=", "name=", "<|literal|>", "<|return|>"):
        assert attribute not in text
    assert "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>" in text
    assert "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>" in text


def test_model_output_becomes_a_transcript_with_call_ids_and_preambles(encoding: HarmonyEncoding) -> None:
    generated = encoding.encode_with_specials(
        "<|start|>user<|message|>Weather?<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking the weather now.<|end|>"
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"SF"}<|call|>'
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temp":20}<|end|>'
        "<|start|>assistant<|channel|>final<|message|>20 degrees.<|return|>"
    )
    messages = parse_tokens(generated, role=None).messages
    counter = itertools.count(1)
    t = from_conversation(Conversation(messages=tuple(messages)), call_id=lambda: f"c{next(counter)}")
    analysis, preamble, call, reply, final = t.messages[1:]
    assert analysis.channel == "analysis" and analysis.intent is None
    assert preamble.intent == "preamble"
    assert (call.call_id, call.recipient, call.constrain, call.terminator.value) == ("c1", "functions.get_weather", "json", "call")
    assert (reply.role, reply.name, reply.call_id) == ("tool", "functions.get_weather", "c1")
    assert final.terminator.value == "return"
    assert not read_transcript(write_transcript(t)).problems


def test_generated_call_ids_are_unique() -> None:
    call = Message.of(Role.ASSISTANT, "{}", channel="commentary", recipient="functions.f")
    reply = Message(author=Author(role=Role.TOOL, name="functions.f"), content=(TextContent(text="1"),),
                    channel="commentary", recipient="assistant")
    t = from_conversation(Conversation(messages=(call, reply) * 20))
    ids = [m.call_id for m in t.messages if m.is_call]
    assert len(set(ids)) == 20
    assert [m.call_id for m in t.messages if m.role == "tool"] == ids


def test_edited_system_text_wins_over_the_stored_structure() -> None:
    conversation = fixed_conversations()["simple"]
    text = write_transcript(from_conversation(conversation)).replace("Knowledge cutoff: 2024-06", "Knowledge cutoff: 2025-01")
    back = to_conversation(read_transcript(text))
    assert isinstance(back.messages[0].content[0], TextContent)
    assert "2025-01" in back.messages[0].text


@pytest.mark.parametrize("text", ["\x85", "line\u2028separator", "para\u2029graph"])
def test_yaml_line_breaks_in_header_values_survive_the_transcript(text: str) -> None:
    """PyYAML folds NEL/LS/PS into spaces unless they are escaped (found by the property above)."""
    from app.domain.messages import DeveloperContent, Message, Role

    conversation = Conversation(messages=(Message.of(Role.DEVELOPER, DeveloperContent(instructions=text)),))
    assert through_transcript(conversation) == conversation
