"""The context budget and the overflow policies, without a model: the budget's arithmetic and
sentences, and `fit` on the real Harmony renderer with the real o200k tokenizer (the template's
prompt ids are exactly what a gpt-oss model would be sent) — what each policy keeps, drops and
cuts, that a tool call never leaves without its result, and that every change is said."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.domain.attachments import HEAD, compose, split
from app.domain.budget import NEARLY_FULL, Budget, Cut, Overflow, notice, reserve_for
from app.domain.events import ContextFit, PromptRendered
from app.domain.history import ChatDoc, Reply
from app.domain.messages import (
    Conversation,
    DeveloperContent,
    Message,
    Role,
    SystemContent,
    TextContent,
    ToolDescription,
)
from app.domain.reply import ReplyBuilder
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.engine.local.tokenizer import ModelTokenizer
from app.engine.overflow import (
    MIN_MARGIN,
    PromptIds,
    estimated_measure,
    fit,
    kept_always,
    margin,
    measure,
    model_measure,
)
from app.engine.request import GenerationRequest
from app.server.chat.wire import ChatRequest
from app.store.rows import build_doc, conversation_row
from app.templates.registry import get_template

WEATHER = ToolDescription(name="get_weather", description="The weather in a city.",
                          parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def _ids() -> PromptIds:
    return PromptIds(get_template("harmony"), ModelTokenizer(ScriptedClient([])))


def _header(tools: bool = False) -> list[Message]:
    developer = DeveloperContent(instructions="Answer in one short sentence.")
    if tools:
        developer = developer.with_function_tools([WEATHER])
    return [Message.of(Role.SYSTEM, SystemContent(conversation_start_date="2026-01-01")),
            Message.of(Role.DEVELOPER, developer)]


def _exchange(n: int, words: int = 40) -> list[Message]:
    return [Message.of(Role.USER, f"Question {n}: " + "tell me about rivers " * (words // 4)),
            Message.of(Role.ASSISTANT, f"Answer {n}: " + "rivers flow to the sea " * (words // 5), channel="final")]


def _tool_exchange(n: int) -> list[Message]:
    return [Message.of(Role.USER, f"Question {n}: the weather in Paris?"),
            Message.of(Role.ASSISTANT, '{"city": "Paris"}', channel="commentary",
                       recipient="functions.get_weather", content_type="<|constrain|>json"),
            Message(author={"role": "tool", "name": "functions.get_weather"},  # type: ignore[arg-type]
                    content=({"type": "text", "text": json.dumps({"sky": "clear " * 30})},),  # type: ignore[arg-type]
                    channel="commentary", recipient="assistant"),
            Message.of(Role.ASSISTANT, f"Answer {n}: it is clear.", channel="final")]


def _long(exchanges: int = 12, tools: bool = False) -> Conversation:
    messages = _header(tools)
    for n in range(exchanges):
        messages += _tool_exchange(n) if tools and n % 3 == 1 else _exchange(n)
    return Conversation(messages=(*messages, Message.of(Role.USER, "The last question: and lakes?")))


# --- the budget -------------------------------------------------------------------------


def test_the_budget_splits_the_context_and_warns_from_85_percent() -> None:
    b = Budget(4096, instructions=120, tools=300, documents=500, history=1000, reserve=1024)
    assert b.used == 1920 and b.left == 4096 - 1920 - 1024 and b.fits and not b.nearly_full
    assert [n for _, n in b.parts()] == [120, 300, 500, 1000, 1024, 1152]
    assert sum(n for _, n in b.parts()) == b.n_ctx
    said = b.sentence()
    assert said.startswith("context 1,920/4,096: instructions 120 · tools 300 · documents 500 · history 1,000")
    assert "answer reserve 1,024, 1,152 left" in said and "full" not in said
    edge = Budget(1000, history=int(NEARLY_FULL * 1000) - 100, reserve=100)
    assert edge.nearly_full and edge.fits and edge.sentence().endswith("— nearly full")
    assert Budget(1000, history=849 - 100, reserve=100).nearly_full is False
    over = Budget(512, history=480, reserve=64)
    assert not over.fits and "over by 32" in over.sentence()
    assert over.sentence(Overflow.ROLLING).endswith("— full: the oldest exchanges are left out (overflow: rolling)")
    assert over.sentence(Overflow.STOP).endswith("— full: the chat stops (overflow: stop)")
    assert Budget(100, history=50, estimated=True).headline() == "context about 50/100"
    assert Budget.from_dict(b.to_dict()) == b and Budget.from_dict({}) is None
    assert b.grown(80).history == 1080 and b.grown(80).used == 2000


def test_the_answers_reserve_is_at_most_half_the_context() -> None:
    assert reserve_for(1024, 4096) == 1024 and reserve_for(1024, 512) == 256 and reserve_for(64, 512) == 64


def test_every_change_is_said_and_nothing_is_said_when_nothing_changed() -> None:
    assert notice(Overflow.ROLLING, 0, 0, ()) == ""
    said = notice(Overflow.DROP_MIDDLE, 2, 4, (Cut("the result of get_weather", 100, 900),))
    assert said == ("Context: 2 earlier exchanges (4 messages) left out of the prompt to fit the context"
                    " (from the middle; the transcript keeps them); the result of get_weather cut to"
                    " 100 of 900 tokens.")
    assert "oldest first" in notice(Overflow.ROLLING, 1, 2, ())


# --- measuring, with the real renderer and tokenizer ------------------------------------------


def test_the_parts_add_up_to_the_prompt_the_model_is_sent() -> None:
    ids = _ids()
    documents = compose(f"{HEAD}\n\nDocument: notes.txt (whole file)\n" + "a note about rivers " * 60, "Sum it up.")
    conversation = _long(3, tools=True).with_message(Message.of(Role.USER, documents))
    b = measure(conversation, model_measure(ids, 8192, 256))
    assert b.used == len(ids.template.prompt_ids(conversation, ids.tokenizer))  # exactly the prompt
    assert b.tools > 20 and b.documents > 200 and b.instructions > 10 and b.history > 100
    assert b.reserve == 256 and b.n_ctx == 8192
    bare = measure(_long(3), model_measure(ids, 8192, 256))
    assert bare.tools == 0 and bare.documents == 0


# --- the policies ------------------------------------------------------------------------


def test_stop_leaves_the_conversation_as_it_is_and_says_it_is_over() -> None:
    conversation = _long()
    fitted = fit(conversation, model_measure(_ids(), 512, 64), Overflow.STOP)
    assert fitted.conversation is conversation and not fitted.event.changed
    assert fitted.event.budget.used > 512 - 64 and not fitted.event.budget.fits


def test_a_conversation_that_fits_is_never_touched_whatever_the_policy() -> None:
    conversation = _long(2)
    for policy in Overflow:
        fitted = fit(conversation, model_measure(_ids(), 8192, 256), policy)
        assert fitted.conversation is conversation and not fitted.event.changed and fitted.event.budget.fits


@pytest.mark.parametrize("policy", [Overflow.ROLLING, Overflow.DROP_MIDDLE])
def test_rolling_and_drop_middle_keep_the_instructions_and_drop_the_oldest_exchanges_by_whole_margins(
        policy: Overflow) -> None:
    conversation, m = _long(), model_measure(_ids(), 600, 64)
    fitted = fit(conversation, m, policy)
    kept, event = fitted.conversation.messages, fitted.event
    assert event.budget.fits and event.dropped > 0 and event.exchanges > 0 and event.changed
    assert len(kept) == len(conversation.messages) - event.dropped
    assert kept[:2] == conversation.messages[:2]  # the system and developer messages
    assert kept[-1].text == "The last question: and lakes?"
    users = [x.text.split(":")[0] for x in kept if x.author.role is Role.USER]
    first = ["Question 0"] if policy is Overflow.DROP_MIDDLE else []
    gone = event.exchanges + len(first)
    assert users == [*first, *[f"Question {n}" for n in range(gone, 12)], "The last question"]
    # the overflow rounded up to whole margins is taken off, by the fewest exchanges that do it
    whole, step = m.prompt(conversation), margin(measure(conversation, m))
    over = whole + m.reserve - m.n_ctx
    rounded = -(-over // step) * step
    assert 0 < over < rounded <= over + step and whole - event.budget.used >= rounded
    one_fewer = Conversation(messages=(*kept[:2 + 2 * len(first)],
                                       *conversation.messages[2 + 2 * (gone - 1): 2 + 2 * gone],
                                       *kept[2 + 2 * len(first):]))
    assert whole - m.prompt(one_fewer) < rounded


def test_the_margin_is_half_the_room_the_history_has_and_at_least_64_tokens() -> None:
    assert margin(Budget(4096, instructions=80, tools=16, history=9000, reserve=1024)) == (4096 - 1120) // 2
    assert margin(Budget(512, instructions=40, history=900, reserve=256)) == 108
    assert margin(Budget(512, instructions=300, history=900, reserve=100)) == MIN_MARGIN == 64
    b = Budget(512, instructions=40, reserve=48)
    assert margin(b) == margin(b.grown(5000))  # the history's own size never moves it


def _growing(policy: Overflow, turns: int = 30) -> tuple[list[list[int]], list[ContextFit], list[int], int]:
    """A chat at 512 tokens of context (64 for the answer) growing by an exchange of about 60
    tokens a turn: each turn's fitted prompt ids (as sent), what the fit said, how far the
    whole conversation was over the context, and the margin."""
    ids = _ids()
    m = model_measure(ids, 512, 64)
    messages, prompts, fits, overs = _header(), [], [], []
    for n in range(turns):
        messages.append(Message.of(Role.USER, f"Question {n}: " + "tell me about rivers " * 4))
        conversation = Conversation(messages=tuple(messages))
        fitted = fit(conversation, m, policy)
        prompts.append(list(ids(fitted.conversation)))
        fits.append(fitted.event)
        overs.append(-measure(conversation, m).left)
        messages.append(Message.of(Role.ASSISTANT, f"Answer {n}: " + "rivers flow to the sea " * 4,
                                   channel="final"))
    return prompts, fits, overs, margin(measure(conversation, m))


@pytest.mark.parametrize("policy", [Overflow.ROLLING, Overflow.DROP_MIDDLE])
def test_a_growing_conversation_keeps_the_start_of_its_prompt_but_once_per_margin_of_growth(policy: Overflow) -> None:
    """Turn after turn, the prompt sent starts with the whole of the previous one (so the
    model's cache of it is reused) except on the turns where what is left out moves: the first
    turn over the context, then once per margin's worth of growth — not on every turn."""
    prompts, fits, overs, step = _growing(policy)
    assert all(f.budget.fits and len(p) == f.budget.used for p, f in zip(prompts, fits, strict=True))
    assert all(len(p) + 64 <= 512 for p in prompts)
    turn = overs[-1] - overs[-2]
    assert 50 <= turn <= 70 and step > 3 * turn, (turn, step)  # ~60 tokens a turn, a margin of ~190
    moved = [t for t in range(1, len(prompts)) if prompts[t][:len(prompts[t - 1])] != prompts[t - 1]]
    changed = [t for t in range(1, len(fits)) if fits[t].exchanges != fits[t - 1].exchanges]
    assert moved == changed  # the prompt's start moves exactly when what is left out does
    over = [t for t, x in enumerate(overs) if x > 0]
    assert over[0] == moved[0] and over[-1] == len(prompts) - 1  # the first turn over moves it
    multiples = overs[-1] // step - overs[over[0]] // step  # margins crossed after that
    assert len(moved) <= 1 + multiples, (moved, overs, step)
    assert len(moved) - 1 <= len(over) // 3, (moved, len(over))  # then at most one turn in three
    if policy is Overflow.DROP_MIDDLE:  # the header and the first question never leave the cache
        assert all(p[:len(prompts[0])] == prompts[0] for p in prompts)


def test_a_tool_call_never_leaves_without_its_result() -> None:
    conversation = _long(12, tools=True)
    for n_ctx in range(500, 1400, 60):
        fitted = fit(conversation, model_measure(_ids(), n_ctx, 64), Overflow.ROLLING)
        kept = fitted.conversation.messages
        calls = [i for i, x in enumerate(kept) if x.recipient == "functions.get_weather"]
        results = [i for i, x in enumerate(kept) if x.author.role is Role.TOOL]
        assert [i + 1 for i in calls] == results  # each result right after its call, both or neither
        assert fitted.event.budget.fits or fitted.event.exchanges == 0


def test_a_tool_result_larger_than_its_share_is_cut_with_a_marker_and_said() -> None:
    huge = json.dumps({"rows": ["a measurement of the river's flow"] * 400})
    call = _tool_exchange(1)[:3]
    call[2] = call[2].model_copy(update={"content": (TextContent(text=huge),)})
    conversation = Conversation(messages=(*_header(tools=True), *call))
    m = model_measure(_ids(), 1024, 128)
    fitted = fit(conversation, m, Overflow.ROLLING)
    result = fitted.conversation.messages[-1]
    (cut,) = fitted.event.cuts
    assert cut.what == "the result of get_weather" and cut.total > 1000 and 0 < cut.kept <= fitted.event.budget.share
    assert result.text.startswith(huge[:200]) and "did not fit the context …]" in result.text
    assert f"of {cut.total:,} did not fit" in result.text and fitted.event.budget.fits
    assert "the result of get_weather cut to" in notice(Overflow.ROLLING, 0, 0, fitted.event.cuts)
    assert fit(conversation, m, Overflow.STOP).conversation is conversation  # stop cuts nothing


def test_attached_documents_larger_than_their_share_are_cut_and_the_question_kept() -> None:
    context = f"{HEAD}\n\nDocument: river.txt (whole file)\n" + "The river rises in the hills. " * 400
    conversation = Conversation(messages=(*_header(), Message.of(Role.USER, compose(context, "What is it about?"))))
    fitted = fit(conversation, model_measure(_ids(), 1024, 128), Overflow.DROP_MIDDLE)
    kept_context, question = split(fitted.conversation.messages[-1].text)
    assert question == "What is it about?" and kept_context.startswith(context[:300])
    assert "did not fit the context …]" in kept_context and fitted.event.cuts[0].what == "the attached documents"
    assert fitted.event.budget.fits and fitted.event.budget.documents <= fitted.event.budget.share


def test_what_a_policy_always_keeps_is_the_room_a_new_message_has() -> None:
    conversation = _long(4)
    assert kept_always(conversation, Overflow.STOP) is conversation
    assert kept_always(conversation, Overflow.ROLLING).messages == conversation.messages[:2]
    assert kept_always(conversation, Overflow.DROP_MIDDLE).messages == conversation.messages[:4]


def test_a_remote_endpoints_budget_is_estimated_and_fitted_the_same_way() -> None:
    fitted = fit(_long(), estimated_measure(700, 100), Overflow.ROLLING)
    assert fitted.event.budget.estimated and fitted.event.budget.fits and fitted.event.dropped > 0
    assert fitted.event.budget.headline().startswith("context about ")


# --- the session, the reply, the server's words, the store --------------------------------


def test_a_generation_says_its_budget_before_its_prompt_and_sends_what_was_fitted() -> None:
    client = ScriptedClient(["<|start|>assistant<|channel|>final<|message|>Lakes are still.<|return|>"])
    session = ChatSession(client, get_template("harmony"), max_tokens=64)  # type: ignore[arg-type]
    client.info = type("Info", (), {"n_ctx": 600})()  # type: ignore[assignment]
    events = list(session.generate(_long(), GenerationRequest(overflow=Overflow.ROLLING)))
    fits = [e for e in events if isinstance(e, ContextFit)]
    prompt = next(e for e in events if isinstance(e, PromptRendered))
    assert events.index(fits[0]) < events.index(prompt) and len(fits) == 1
    assert fits[0].changed and len(prompt.ids) == fits[0].budget.used <= 600 - 64


def test_the_reply_says_what_was_left_out_once_and_keeps_the_budget_for_the_status_bar() -> None:
    reply = Reply()
    builder = ReplyBuilder(reply)
    event = ContextFit(Budget(512, 20, 0, 0, 400, 64), Overflow.DROP_MIDDLE, exchanges=3, dropped=6)
    builder.apply(event)
    builder.apply(event)  # the next step of a tool turn fits the same conversation again
    notices = [s.text for s in reply.segments if s.kind == "notice"]
    assert notices == [notice(Overflow.DROP_MIDDLE, 3, 6, ())]
    assert Budget.from_dict(reply.debug.budget) == event.budget
    assert any(line.startswith("context 420/512") for line in reply.debug.events)
    builder.apply(ContextFit(Budget(512, history=10)))
    assert len([s for s in reply.segments if s.kind == "notice"]) == 1  # nothing changed: nothing said


@pytest.mark.parametrize(("body", "policy"), [
    ({}, Overflow.STOP),
    ({"error_behavior": "truncate"}, Overflow.DROP_MIDDLE),
    ({"error_behavior": "error"}, Overflow.STOP),
    ({"overflow": "rolling"}, Overflow.ROLLING),
    ({"overflow": "stop", "error_behavior": "truncate"}, Overflow.STOP),  # ours wins
])
def test_a_chat_request_names_its_policy(body: dict[str, Any], policy: Overflow) -> None:
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": "Hi"}], **body})
    assert request.policy is policy


def test_a_conversations_policy_is_saved_with_it() -> None:
    for policy in (None, *Overflow):
        doc = ChatDoc(title="Rivers", overflow=policy)
        assert build_doc(conversation_row(doc), [], [], {}).overflow == policy
