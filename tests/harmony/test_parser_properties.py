"""Properties of the parser: total on any token sequence; render → parse round trips."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain.events import MessageDone, ParseIssue, StopReason, TurnDone
from app.domain.messages import Message, Role
from app.domain.visibility import Lane
from app.harmony.encoding import HarmonyEncoding
from app.harmony.parser import StreamParser, make_parser, parse_tokens
from app.harmony.renderer import Renderer
from tests.harmony.test_parser_reference import completion_tokens
from tests.strategies import assistant_messages, special_heavy_tokens


@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tokens=special_heavy_tokens,
    role=st.sampled_from([Role.ASSISTANT, None]),
    strict=st.booleans(),
    split=st.integers(0, 60),
)
def test_parser_never_raises_and_always_closes_the_turn(
    tokens: list[int], role: Role | None, strict: bool, split: int, encoding: HarmonyEncoding
) -> None:
    parser = make_parser(encoding, role=role, strict=strict)
    events = parser.feed_many(tokens[:split])
    for token in tokens[split:]:
        events += parser.feed(token)
    events += parser.finish("length")
    assert isinstance(events[-1], TurnDone)
    assert sum(isinstance(e, TurnDone) for e in events) == 1
    done = [e for e in events if isinstance(e, MessageDone)]
    assert [e.message for e in done] == parser.messages
    assert all(isinstance(i, ParseIssue) for i in parser.issues)


@settings(max_examples=1000, deadline=None)
@given(tokens=special_heavy_tokens)
def test_batch_and_token_by_token_agree(tokens: list[int], encoding: HarmonyEncoding) -> None:
    batch = parse_tokens(tokens, encoding=encoding)
    one = StreamParser(encoding)
    for token in tokens:
        one.feed(token)
    one.finish()
    assert one.messages == batch.messages
    assert one.stop == batch.stop
    assert [i.code for i in one.issues] == [i.code for i in batch.issues]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=assistant_messages())
def test_render_then_parse_round_trips(messages: list[Message], renderer: Renderer) -> None:
    result = parse_tokens(completion_tokens(renderer, messages), encoding=renderer.encoding)
    assert result.messages == messages
    assert result.stop in (StopReason.RETURN, StopReason.CALL)
    assert not [i for i in result.issues if i.severity.value != "debug"]


@settings(max_examples=500, deadline=None)
@given(tokens=special_heavy_tokens)
def test_unsure_text_is_never_an_answer(tokens: list[int], encoding: HarmonyEncoding) -> None:
    parser = StreamParser(encoding)
    events = parser.feed_many(tokens) + parser.finish()
    for event in events:
        if isinstance(event, MessageDone) and event.lane is Lane.ANSWER:
            assert event.message.channel == "final"
            assert not event.message.recipient or event.message.recipient in ("all", "user")
