"""Compaction under the summarise policy. With real llama.cpp (the bundled SmolLM2 at 1,024
tokens of context): a conversation pushed past the threshold compacts once, says so on the reply
with its record, keeps every message, sends the summary in place of the older exchanges, and the
next three turns reuse the compacted prefix (reused tokens > 0 each) without compacting again;
undoing it (dropping the record) gives back the exact conversation. Asked to compact ahead,
the compaction the next turn would need is made after the answer, its prompt read once, and the
next turn neither compacts nor reads more than its own message. With the tiny random-weight
gpt-oss, a compaction asked for runs through the real Harmony path. With a scripted Harmony
source, the summary keeps the final answer and never the analysis. The overlay itself: applied
only to the messages it was made on, recorded on a reply and read back."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from app.domain.budget import Overflow
from app.domain.compaction import SUMMARY_OPENS, Compaction, compacted, fingerprint, recorded
from app.domain.events import Compacted, Compacting, GenerationDone, ParseIssue, PromptRendered
from app.domain.history import Reply
from app.domain.messages import Conversation, Message, Role, user_message
from app.domain.reply import ReplyBuilder
from app.engine.request import GenerationRequest, SamplingAsk
from app.engine.turn.run import TurnRequest, run_turn

N_CTX = 1024
FACTS = ["My sister Ilse keeps nine goats in Tromsø.", "The boat is called Marisol.",
         "Our budget is 4,200 euros.", "The meeting moved to Thursday at 14:00.",
         "My favourite colour is teal.", "The cat is named Pixel.", "I was born in 1987.",
         "The project code is HX-31."]


def _history(n: int) -> Conversation:
    messages: list[Message] = [Message.of(Role.SYSTEM, "You are a helpful assistant.")]
    for i in range(n):
        fact = FACTS[i % len(FACTS)]
        messages.append(Message.of(Role.USER, f"Remember this, please: {fact} " + "Details follow. " * 12))
        messages.append(Message.of(Role.ASSISTANT, f"Noted: {fact} " + "I will keep it in mind. " * 6))
    return Conversation(messages=tuple(messages))


@pytest.fixture(scope="module")
def small(smollm_model: Any) -> Iterator[Any]:
    from app.engine.local.client import WorkerClient

    client = WorkerClient()
    client.load(smollm_model, n_ctx=N_CTX, n_threads=1)
    yield client
    client.close()


def _turn(session: Any, request: TurnRequest) -> tuple[list[Any], Reply]:
    reply = Reply()
    builder = ReplyBuilder(reply)
    events = []
    for event in run_turn(session, request):
        builder.apply(event)
        events.append(event)
    return events, reply


def test_a_conversation_past_the_threshold_compacts_once_and_reuses_its_prefix(small: Any) -> None:
    from app.engine.local.session import ChatSession
    from app.engine.local.tokenizer import ModelTokenizer
    from app.templates.registry import get_template

    session = ChatSession(small, get_template("smollm2"), max_tokens=32)
    history = _history(7)
    assert session.prompt_size(history) > 0.8 * N_CTX - 32  # past the threshold with a question
    asked = GenerationRequest(overflow=Overflow.SUMMARISE, sampling=SamplingAsk(seed=1))
    events, reply = _turn(session, TurnRequest(asked, message=user_message("What is the boat called?"),
                                               conversation=history))
    made = [e.compaction for e in events if isinstance(e, Compacted)]
    assert len(made) == 1 and [type(e) for e in events].count(Compacting) == 1
    compaction = made[0]
    assert compaction.summary.strip() and compaction.tokens_after < compaction.tokens_before
    assert compaction.covered % 2 == 0 and compaction.exchanges == compaction.covered // 2
    assert recorded(reply.segments) == compaction  # on the reply, where it happened
    marker = next(s for s in reply.segments if "compaction" in s.data)
    assert compaction.said() in marker.text and "exchanges summarised" in marker.text
    whole = session.conversation
    assert whole.messages[: len(history.messages)] == history.messages  # every message stays
    table = ModelTokenizer(small).token_table()
    sent = [b"".join(table[i] for i in e.ids).decode("utf-8", "replace")
            for e in events if isinstance(e, PromptRendered)]
    assert SUMMARY_OPENS in sent[-1] and compaction.summary.strip()[:40] in sent[-1]
    assert FACTS[0] not in sent[-1].split(SUMMARY_OPENS)[1][len(compaction.summary):]  # covered: out
    later = GenerationRequest(overflow=Overflow.SUMMARISE, sampling=SamplingAsk(seed=1), compaction=compaction)
    for question in ("And the cat?", "Which colour?", "Thanks."):
        events, _ = _turn(session, TurnRequest(later, message=user_message(question)))
        assert not any(isinstance(e, Compacting) for e in events)
        done = [e for e in events if isinstance(e, GenerationDone)]
        assert done and done[-1].timings.prompt_reused > 0, done[-1].timings
    assert compacted(session.conversation, None) == session.conversation  # undone: all of it


def test_a_compaction_made_ahead_comes_after_the_answer_and_the_next_turn_reads_only_its_message(
    small: Any,
) -> None:
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template

    session = ChatSession(small, get_template("smollm2"), max_tokens=32)
    history = _history(6)
    asked = GenerationRequest(
        overflow=Overflow.SUMMARISE, sampling=SamplingAsk(seed=1), compact_ahead=True, keep="ahead"
    )
    message = user_message("What is the boat called?")
    whole = history.with_message(message)
    assert session.prompt_size(whole) + 32 <= 0.8 * N_CTX  # this turn fits: no summary first
    events, reply = _turn(session, TurnRequest(asked, message=message, conversation=history))
    kinds = [type(e) for e in events]
    assert GenerationDone in kinds and Compacted in kinds, [e for e in events if isinstance(e, ParseIssue)]
    assert kinds.index(Compacting) > kinds.index(GenerationDone)  # made after the answer
    compaction = recorded(reply.segments)
    assert compaction is not None and compaction.tokens_after < compaction.tokens_before
    later = dataclasses.replace(asked, compaction=compaction)
    events, _ = _turn(session, TurnRequest(later, message=user_message("And the cat?")))
    assert Compacting not in [type(e) for e in events[: [type(e) for e in events].index(GenerationDone)]]
    done = next(e for e in events if isinstance(e, GenerationDone)).timings
    # the compacted prompt was read ahead: only the new message (and its opening) is read now
    assert done.prompt_evaluated <= 40 < done.prompt_reused + done.prompt_restored, done


def test_a_compaction_applies_only_to_the_messages_it_was_made_on() -> None:
    history = _history(3).with_message(user_message("Next?"))
    covered = history.messages[1:3]
    made = Compaction("They talked about goats.", 2, fingerprint(covered), 1, 500, 100)
    view = compacted(history, made)
    assert len(view.messages) == len(history.messages) - 2
    assert view.messages[1].text.startswith(SUMMARY_OPENS) and view.messages[1].text.endswith(history.messages[3].text)
    edited = Conversation(messages=(history.messages[0], Message.of(Role.USER, "Another start."),
                                    *history.messages[2:]))
    assert compacted(edited, made) == edited  # an edited earlier message: the overlay no longer fits
    assert Compaction.from_dict(made.to_dict()) == made
    with pytest.raises(Exception, match="malformed"):
        Compaction.from_dict({"summary": "x"})


def test_the_summary_keeps_the_answer_and_never_the_analysis() -> None:
    from app.engine.local.scripted import ScriptedClient
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template

    summary = ("<|channel|>analysis<|message|>zebra-secret reasoning about goats<|end|>"
               "<|start|>assistant<|channel|>final<|message|>Ilse keeps goats; the boat is Marisol.<|return|>")
    answer = "<|channel|>final<|message|>Marisol.<|return|>"
    client = ScriptedClient([summary, answer])
    session = ChatSession(client, get_template("harmony"), max_tokens=64)  # type: ignore[arg-type]
    history = _history(4)
    asked = GenerationRequest(overflow=Overflow.SUMMARISE, compact_now=True)
    events, reply = _turn(session, TurnRequest(asked, message=user_message("The boat?"), conversation=history))
    made = next(e.compaction for e in events if isinstance(e, Compacted))
    assert made.summary == "Ilse keeps goats; the boat is Marisol."
    assert "zebra" not in made.summary and "zebra" not in str(reply.segments)
    assert [s.text for s in reply.segments if s.kind == "answer"] == ["Marisol."]


def test_the_tiny_gpt_oss_compacts_through_the_real_harmony_path(tiny_client: Any) -> None:
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template

    session = ChatSession(tiny_client, get_template("harmony"), max_tokens=16)
    asked = GenerationRequest(overflow=Overflow.SUMMARISE, compact_now=True, sampling=SamplingAsk(seed=3))
    events, _reply = _turn(session, TurnRequest(asked, message=user_message("Go on."), conversation=_history(2)))
    compacting = [e for e in events if isinstance(e, Compacting)]
    assert len(compacting) == 1 and compacting[0].exchanges == 2
    made = [e.compaction for e in events if isinstance(e, Compacted)]
    issues = [e for e in events if isinstance(e, ParseIssue) and "not compacted" in e.message]
    assert len(made) + len(issues) == 1  # random weights: a summary, or the reason there is none
    assert any(isinstance(e, GenerationDone) for e in events)  # the turn was answered either way
    assert session.conversation.messages[:5] == _history(2).messages


def test_a_second_compaction_reads_the_summary_so_far_and_only_what_came_after_it() -> None:
    from app.engine.local.scripted import ScriptedClient
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template

    client = ScriptedClient(["<|channel|>final<|message|>Both summaries in one.<|return|>",
                             "<|channel|>final<|message|>Marisol.<|return|>"])
    session = ChatSession(client, get_template("harmony"), max_tokens=64)  # type: ignore[arg-type]
    history = _history(6)
    first = Compaction("First summary: goats in Tromsø.", 4, fingerprint(history.messages[1:5]), 2, 900, 300)
    asked = GenerationRequest(overflow=Overflow.SUMMARISE, compact_now=True, compaction=first)
    events, _reply = _turn(session, TurnRequest(asked, message=user_message("The boat?"), conversation=history))
    made = next(e.compaction for e in events if isinstance(e, Compacted))
    summary_prompt = client.encoding.decode(client.prompts[0])
    assert "First summary: goats in Tromsø." in summary_prompt
    assert FACTS[0] not in summary_prompt and FACTS[1] not in summary_prompt  # covered already: not read again
    assert FACTS[2] in summary_prompt  # what came after the first summary
    assert made.covered > first.covered and made.fingerprint == fingerprint(history.messages[1 : 1 + made.covered])
