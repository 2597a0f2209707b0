"""The domain model: immutability, the openai-harmony JSON form, the visibility rule."""

from __future__ import annotations

import json

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings

from app.domain.messages import Conversation, Message, ReasoningEffort, Role, SystemContent
from app.domain.visibility import Lane, route, shows_text
from app.errors import InvalidInputError
from tests.fixed_conversations import fixed_conversations
from tests.strategies import conversations


def test_updates_return_new_values() -> None:
    empty = Conversation()
    one = empty.with_message(Message.of(Role.USER, "hi"))
    assert empty.messages == () and len(one.messages) == 1
    message = one.messages[0]
    assert message.with_channel("final").channel == "final" and message.channel is None
    with pytest.raises(pydantic.ValidationError):
        message.channel = "final"  # type: ignore[misc]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations())
def test_json_round_trips_through_openai_harmony(conversation: Conversation) -> None:
    import openai_harmony as oh

    ours = json.dumps(conversation.to_dict())
    theirs = oh.Conversation.from_json(ours)
    assert Conversation.from_dict(json.loads(theirs.to_json())) == conversation_with_reference_defaults(conversation)
    assert Conversation.from_dict(json.loads(ours)) == conversation


def conversation_with_reference_defaults(conversation: Conversation) -> Conversation:
    """openai-harmony's `to_json` drops unset fields, so its reader restores their defaults."""
    defaults = SystemContent()
    messages = []
    for m in conversation.messages:
        contents = []
        for c in m.content:
            if isinstance(c, SystemContent):
                unset = {k: getattr(defaults, k) for k in ("model_identity", "reasoning_effort",
                         "knowledge_cutoff", "channel_config") if getattr(c, k) is None}
                c = c.model_copy(update=unset)
            contents.append(c)
        messages.append(m.model_copy(update={"content": tuple(contents)}))
    return Conversation(messages=tuple(messages))


def test_reads_the_compact_wire_form() -> None:
    raw = {"messages": [{"role": "assistant", "content": "Hi", "channel": "final"},
                        {"role": "system", "content": [{"type": "system_content", "reasoning_effort": "High",
                                                        "unknown_key": 1}]}]}
    conversation = Conversation.from_dict(raw)
    assert conversation.messages[0].text == "Hi"
    system = conversation.messages[1].content[0]
    assert isinstance(system, SystemContent) and system.reasoning_effort is ReasoningEffort.HIGH


@pytest.mark.parametrize(
    "raw, fragment",
    [({"messages": [{"role": "robot", "content": "x"}]}, "unknown role"),
     ({"messages": [{"role": "user", "content": [{"type": "audio"}]}]}, "unknown content type"),
    ({"messages": [{"role": "user", "content": [{"type": "image"}]}]}, "sha256: Field required"),
     ({"message": []}, "messages"),
     ({"messages": [{"role": "user", "content": 5}]}, "content")],
)
def test_bad_conversations_are_clear_errors(raw: object, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        Conversation.from_dict(raw)


def test_fixed_conversations_round_trip() -> None:
    for conversation in fixed_conversations().values():
        assert Conversation.from_dict(json.loads(json.dumps(conversation.to_dict()))) == conversation


@pytest.mark.parametrize(
    "role, channel, recipient, lane",
    [(Role.ASSISTANT, "final", None, Lane.ANSWER),
     (Role.ASSISTANT, "commentary", None, Lane.PREAMBLE),
     (Role.ASSISTANT, "analysis", None, Lane.ANALYSIS),
     (Role.ASSISTANT, None, None, Lane.ANALYSIS),
     (Role.ASSISTANT, "finalx", None, Lane.ANALYSIS),
     (Role.ASSISTANT, "commentary", "functions.f", Lane.TOOL_CALL),
     (Role.ASSISTANT, "analysis", "python", Lane.TOOL_CALL),
     (Role.ASSISTANT, "final", "functions.f", Lane.TOOL_CALL),
     (Role.ASSISTANT, "final", "all", Lane.ANSWER),
     (Role.TOOL, "commentary", "assistant", Lane.TOOL_RESULT),
     (Role.USER, None, None, Lane.PROMPT)],
)
def test_visibility_rule(role: Role, channel: str | None, recipient: str | None, lane: Lane) -> None:
    assert route(role, channel, recipient) is lane
    assert shows_text(lane) == (lane in (Lane.ANSWER, Lane.PREAMBLE))
