"""Each overflow policy on a conversation longer than the context, with real llama.cpp: the
bundled SmolLM2 loaded with 512 tokens of context, through the engine (what the prompt kept,
and that past the context the KV cache is reused turn after turn), the terminal chat, the local server (the `openai` SDK on loopback) and the window."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from app.domain.budget import Overflow
from app.domain.events import ContextFit, GenerationDone, PromptRendered, Timings, TurnFailed
from app.domain.history import Reply
from app.domain.messages import user_message
from app.domain.reply import ReplyBuilder
from app.engine.overflow import margin
from app.engine.request import GenerationRequest, SamplingAsk
from app.engine.turn.run import TurnRequest, run_turn
from app.errors import ErrorCode
from tests.server.test_server import _serve

ROOT = Path(__file__).resolve().parents[2]
N_CTX = 512
QUESTIONS = [f"Question {n}: tell me everything you know about the river number {n}, its source,"
             " its towns, its bridges, its fish and its floods, in detail." for n in range(7)]


@pytest.fixture(scope="module")
def small(smollm_model: Any) -> Iterator[Any]:
    from app.engine.local.client import WorkerClient

    client = WorkerClient()
    client.load(smollm_model, n_ctx=N_CTX, n_threads=1)
    yield client
    client.close()


def _conversation_of(small: Any, policy: Overflow) -> tuple[list[Any], list[Reply]]:
    """Every event and reply of the seven questions, asked in one chat under `policy`."""
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template

    session = ChatSession(small, get_template("smollm2"), max_tokens=48)
    asked = GenerationRequest(overflow=policy, sampling=SamplingAsk(seed=1))
    events, replies = [], []
    for question in QUESTIONS:
        reply = Reply()
        builder = ReplyBuilder(reply)
        for event in run_turn(session, TurnRequest(asked, message=user_message(question))):
            builder.apply(event)
            events.append(event)
        replies.append(reply)
    return events, replies


def _said(small: Any, ids: tuple[int, ...]) -> str:
    from app.engine.local.tokenizer import ModelTokenizer

    table = ModelTokenizer(small).token_table()
    return b"".join(table[i] for i in ids).decode("utf-8", errors="replace")


def test_stop_refuses_with_a_clear_message_once_the_prompt_outgrows_the_context(small: Any) -> None:
    events, replies = _conversation_of(small, Overflow.STOP)
    failed = [e for e in events if isinstance(e, TurnFailed)]
    assert failed and failed[0].code is ErrorCode.CONTEXT and "the context holds 512" in failed[0].reason
    assert replies[0].state != "failed" and "no longer fits the model's context" in replies[-1].segments[-1].text
    assert "drop-middle or rolling" in replies[-1].segments[-1].text
    assert not any(isinstance(e, ContextFit) and e.changed for e in events)  # nothing left out


@pytest.mark.parametrize("policy", [Overflow.DROP_MIDDLE, Overflow.ROLLING])
def test_drop_middle_and_rolling_answer_every_question_within_the_context(small: Any, policy: Overflow) -> None:
    events, replies = _conversation_of(small, policy)
    assert not [e for e in events if isinstance(e, TurnFailed)]
    assert all(r.visible_text().strip() for r in replies)  # every question answered
    fits = [e for e in events if isinstance(e, ContextFit)]
    assert all(f.budget.used + f.budget.reserve <= N_CTX for f in fits)
    assert fits[-1].changed and fits[-1].exchanges >= 2
    notices = [s.text for s in replies[-1].segments if s.kind == "notice"]
    assert notices and "left out of the prompt" in notices[0]
    prompt = _said(small, [e for e in events if isinstance(e, PromptRendered)][-1].ids)
    assert "Question 6" in prompt and "Question 1:" not in prompt
    assert ("Question 0:" in prompt) is (policy is Overflow.DROP_MIDDLE)  # the first exchange kept


def _saturating(small: Any, policy: Overflow) -> tuple[list[int], list[ContextFit], list[Timings], int]:
    """Twenty short questions (answers of at most 16 tokens) in one chat under `policy`: for
    each turn, how far the whole conversation was over the context, what the fit said and the
    generation's timings; and the margin."""
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template

    session = ChatSession(small, get_template("smollm2"), max_tokens=16)
    asked = GenerationRequest(overflow=policy, sampling=SamplingAsk(seed=1))
    overs, fits, timings = [], [], []
    for n in range(20):
        message = user_message(f"Question {n}: name a river.")
        whole = session.fit(session.conversation.with_message(message)).event.budget  # under stop
        overs.append(-whole.left)
        events = list(run_turn(session, TurnRequest(asked, message=message)))
        fits.append([e for e in events if isinstance(e, ContextFit)][-1])
        timings.append([e for e in events if isinstance(e, GenerationDone)][-1].timings)
    return overs, fits, timings, margin(whole)


@pytest.mark.parametrize("policy", [Overflow.DROP_MIDDLE, Overflow.ROLLING])
def test_a_saturated_chat_reads_its_prompt_again_once_per_margin_not_on_every_turn(small: Any,
                                                                                  policy: Overflow) -> None:
    """Past the context, the turns whose left-out exchanges stay the same reuse the whole
    previous prompt from the KV cache; the prompt is read again only where they move — the
    first turn over, then once per margin of growth (none within this run: each turn grows the
    conversation by under 40 tokens, six turns by less than the ~245-token margin)."""
    overs, fits, timings, step = _saturating(small, policy)
    assert all(f.budget.used + f.budget.reserve <= N_CTX for f in fits)
    assert all(t.prompt_tokens == f.budget.used for t, f in zip(timings, fits, strict=True))
    over = [t for t, x in enumerate(overs) if x > 0]
    assert len(over) >= 5 and over[-1] == len(overs) - 1 and step > 200  # several turns past it
    assert overs[-1] - overs[over[0]] < step - 40  # this run crosses no margin after the first
    for t in over[1:]:
        if fits[t].exchanges == fits[t - 1].exchanges:  # the same left out: the whole previous prompt reused
            assert timings[t].prompt_reused + timings[t].prompt_restored >= timings[t - 1].prompt_tokens
            assert timings[t].prompt_evaluated <= 40, timings[t]
    read_again = [t for t in over if timings[t].prompt_evaluated > timings[t].prompt_tokens // 2]
    assert read_again == [over[0]], [(t.prompt_tokens, t.prompt_evaluated) for t in timings]
    assert len({f.exchanges for f in fits[over[0]:]}) == 1 and fits[-1].changed


# --- the terminal ------------------------------------------------------------------------------


def _chat(policy: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-m", "app", "chat", "--model", "default", "--ctx", str(N_CTX), "--threads",
         "1", "--seed", "1", "--max-tokens", "48", "--overflow", policy],
        input="\n".join(QUESTIONS) + "\n", capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
    )


@pytest.mark.parametrize("policy", ["stop", "drop-middle", "rolling"])
def test_the_terminal_keeps_each_policy_and_prints_the_budget_after_each_turn(policy: str, tmp_path: Path) -> None:
    run = _chat(policy, tmp_path)
    err = run.stderr
    assert run.returncode == 0, err[-2000:]
    budgets = [line for line in err.replace("> ", "\n").splitlines() if line.startswith("[context ")]
    assert len(budgets) >= 3 and "instructions" in budgets[0] and "answer reserve 48" in budgets[0]
    assert any("— nearly full" in b or "— full" in b for b in budgets)
    if policy == "stop":
        assert "[turn failed] the prompt has" in err and "--overflow drop-middle or rolling" in err
        assert "left out of the prompt" not in err
    else:
        assert "[turn failed]" not in err and len(budgets) == len(QUESTIONS)
        where = "from the middle" if policy == "drop-middle" else "oldest first"
        assert f"left out of the prompt to fit the context ({where}" in err
        assert any(f"(overflow: {policy})" in b for b in budgets)  # said on the turns it dropped


# --- the server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    for base in _serve("default", tmp_path_factory.mktemp("small"), "--ctx", str(N_CTX), "--max-tokens", "48"):
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0)
        yield client
        client.close()


def _long_chat() -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You answer briefly."}]
    for n, question in enumerate(QUESTIONS[:-1]):
        messages += [{"role": "user", "content": question},
                     {"role": "assistant", "content": f"River number {n} is long and wide; " * 4}]
    return [*messages, {"role": "user", "content": "Which river was the first one?"}]


def test_the_server_refuses_with_a_reason_under_stop(served: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        served.chat.completions.create(model="any", messages=_long_chat(), max_tokens=32)  # type: ignore[arg-type]
    assert refused.value.code == "context_length_exceeded"
    assert "the context holds 512" in refused.value.message and '"error_behavior": "truncate"' in refused.value.message


@pytest.mark.parametrize(("extra", "where"), [({"error_behavior": "truncate"}, "from the middle"),
                                              ({"overflow": "rolling"}, "oldest first"),
                                              ({"overflow": "drop-middle"}, "from the middle")])
def test_the_server_fits_the_conversation_and_says_so(served: openai.OpenAI, extra: dict[str, str], where: str) -> None:
    raw = served.chat.completions.with_raw_response.create(
        model="any", messages=_long_chat(), max_tokens=32, temperature=0, extra_body=extra,  # type: ignore[arg-type]
    )
    answer = raw.parse()
    assert answer.choices[0].message.content and answer.usage is not None
    assert answer.usage.prompt_tokens + 32 <= N_CTX
    warning = raw.headers.get("x-harmony-desk-warning", "")
    assert "left out of the prompt" in warning and where in warning


# --- the window --------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", list(Overflow))
def test_the_window_shows_the_budget_and_keeps_the_conversations_policy(qtbot: Any, qloop: Any, tmp_path: Path,
                                                                        smollm_model: Any, policy: Overflow) -> None:
    from tests.gui_helpers import real_model_window
    from tests.ui.test_window import send

    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=32, seed=11) as window:
        status, menu, controller = window.status, window.overflow_menu, window.controller
        assert status.budget.isVisible() and "instructions" in status.budget.toolTip()
        assert status.context.text().startswith("context ") and menu.chosen() is Overflow.SUMMARISE
        menu.actions[policy].trigger()
        assert controller.doc.overflow is policy and menu.chosen() is policy
        warned = False
        for question in QUESTIONS:
            send(qtbot, window, question, timeout=120_000)
            warned = warned or "full" in status.context.text()
            reply = controller.doc.turns[-1].version.reply
            assert reply is not None
            if reply.state == "failed":
                break
            assert reply.state in ("done", "incomplete") and reply.visible_text().strip()  # cut at 32
        assert warned or policy is Overflow.SUMMARISE  # summarise compacts before it is full
        if policy is Overflow.SUMMARISE:
            replies = [t.version.reply for t in controller.doc.turns if t.version.reply is not None]
            marks = [s for r in replies for s in r.segments if "compaction" in s.data]
            assert replies[-1].state != "failed" and marks and "exchanges summarised" in marks[0].text
            assert [w for t in window.transcript.turns for w in t.segments if w.objectName() == "notice"]
        elif policy is Overflow.STOP:
            assert reply.state == "failed" and "no longer fits the model's context" in reply.segments[-1].text
            assert not [s for s in reply.segments if s.kind == "notice"]
        else:
            notices = [s.text for s in reply.segments if s.kind == "notice"]
            where = "oldest first" if policy is Overflow.ROLLING else "from the middle"
            assert reply.state != "failed" and notices and where in notices[0]
            assert [w for w in window.transcript.turns[-1].segments if w.objectName() == "notice"]
            widths = dict(status.budget.widths())
            assert widths["history"] > widths["instructions"] and sum(widths.values()) == pytest.approx(120, abs=6)
        chosen = controller.doc.id
        controller.new_chat()  # another chat: the settings' default; back: its own, read from the store
        assert menu.chosen() is Overflow.SUMMARISE
        with qtbot.waitSignal(controller.docChanged, timeout=10_000):
            controller.select(chosen)
        assert controller.doc.overflow is policy and menu.chosen() is policy
