"""L15: a tool result a small model echoes in its template's markup (`<tool_response>{…}`) is
never shown raw. The one reply builder decides it, so the window, the terminal and the server
show the same: while the answer streams, nothing of the markup ever reaches the answer segment
(however the text is cut into deltas); the words inside it stay (nothing the model wrote is
lost) and, when the message closes, a notice says what was repeated. Text with no markup
streams as it always did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.echoed_markup import PAIRS, split
from app.domain.events import ContentDelta, MessageDone, MessageStarted
from app.domain.history import Reply
from app.domain.messages import Message, Role
from app.domain.reply.builder import ReplyBuilder
from app.domain.visibility import Lane

ECHO = '<tool_response> {"ok": true, "content": {"timezone": "Europe/Oslo"}}</tool_response>'
WORDS = '{"ok": true, "content": {"timezone": "Europe/Oslo"}}'  # what the wrapper held


def fold(chunks: list[str], *, stored: bool = False) -> tuple[Reply, list[str]]:
    """An answer message streamed as `chunks` through the reply builder: the reply, and what
    the answer segment showed after each delta."""
    reply = Reply()
    builder = ReplyBuilder(reply, stored=stored)
    builder.apply(MessageStarted(0, Role.ASSISTANT, None, "final", None, None, Lane.ANSWER))
    seen: list[str] = []
    for chunk in chunks:
        builder.apply(ContentDelta(0, chunk, Lane.ANSWER))
        seen.append(reply.segments[0].text)
    whole = Message.of("assistant", "".join(chunks), channel="final")
    builder.apply(MessageDone(0, whole, Lane.ANSWER, True, ()))
    builder.close()
    return reply, seen


def answer_and_notices(reply: Reply) -> tuple[str, list[str]]:
    answers = [s.text for s in reply.segments if s.kind == "answer"]
    return "".join(answers), [s.text for s in reply.segments if s.kind == "notice"]


def test_an_echoed_tool_responses_markup_is_never_shown_and_is_said_in_a_notice() -> None:
    for cut in range(1, len(ECHO)):  # every place a delta may end
        reply, seen = fold([ECHO[:cut], ECHO[cut:]])
        assert all("<tool" not in s and "tool_response" not in s for s in seen), (cut, seen)
        answer, notices = answer_and_notices(reply)
        assert answer == WORDS and len(notices) == 1, (cut, reply.segments)
        assert "template's markup" in notices[0] and '"timezone": "Europe/Oslo"' in notices[0]


def test_the_models_own_words_around_an_echo_are_kept_in_order() -> None:
    text = f"It is 14:23 in Oslo.\n\n{ECHO}\n\nAnything else?"
    reply, seen = fold([text[i : i + 3] for i in range(0, len(text), 3)])
    answer, notices = answer_and_notices(reply)
    assert answer == f"It is 14:23 in Oslo.\n\n{WORDS}\n\nAnything else?" and len(notices) == 1
    assert all("tool_response" not in s for s in seen)
    assert seen[2].startswith("It is")  # the words before the echo streamed as they came


def test_every_templates_wrapper_and_an_unclosed_echo_are_taken_out() -> None:
    for opening, closing in PAIRS:
        shown, echoed = split(f'Here: {opening}{{"v": 1}}{closing}')
        assert shown == 'Here: {"v": 1}' and echoed == ['{"v": 1}'], (opening, shown)
        shown, echoed = split(f'Here: {opening}{{"v": 1')  # cut before it closed
        assert shown == 'Here: {"v": 1' and echoed == ['{"v": 1'], (opening, shown)
    assert split("done</tool_response>") == ("done", [])  # a closer alone is markup too


def test_a_stored_reply_folds_the_same() -> None:
    reply, _ = fold([ECHO], stored=True)
    answer, notices = answer_and_notices(reply)
    assert answer == WORDS and len(notices) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab <>/|_tolresponsu\n", max_size=12), max_size=8))
def test_an_answer_without_markup_streams_and_ends_as_written(chunks: list[str]) -> None:
    text = "".join(chunks)
    if split(text)[0] != text:  # the alphabet spelt a wrapper: not this property's case
        return
    reply, seen = fold(chunks)
    answer, notices = answer_and_notices(reply)
    assert answer == text and notices == []
    assert all(text.startswith(s) for s in seen)  # what streamed is always a prefix


def test_the_terminal_prints_the_same_answer_without_the_markup() -> None:
    import io

    from app.cli.terminal_reply import TerminalReply

    out, err = io.StringIO(), io.StringIO()
    printer = TerminalReply(False, out, err)
    printer.begin(Reply())
    text = f"It is 14:23.\n{ECHO}"
    printer(MessageStarted(0, Role.ASSISTANT, None, "final", None, None, Lane.ANSWER))
    for i in range(0, len(text), 4):
        printer(ContentDelta(0, text[i : i + 4], Lane.ANSWER))
    whole = Message.of("assistant", text, channel="final")
    printer(MessageDone(0, whole, Lane.ANSWER, True, ()))
    assert out.getvalue() == f"It is 14:23.\n{WORDS}\n" and "tool_response" not in err.getvalue()
