"""Tool turns on a chat session: scripted for the flow, and the real tiny gpt-oss model whose
call is constrained by the tool's schema, executed, and answered."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from app.domain.events import ToolsRan, TurnResult
from app.domain.messages import Role
from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.templates.registry import get_template
from app.tools.api import tool
from app.tools.builtin.everyday import calculate
from app.tools.registry import ToolRegistry
from tests.turns import tool_turn


@tool
def square(n: Annotated[int, Field(ge=0, le=99)]) -> int:
    """The square of a whole number from 0 to 99."""
    return n * n


def test_scripted_tool_turn_keeps_the_chain_in_the_follow_up_prompt() -> None:
    client = ScriptedClient([
        "<|channel|>analysis<|message|>Need to multiply.<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.calculate <|constrain|>json<|message|>{"expression":"6*7"}<|call|>',
        "<|channel|>final<|message|>It is 42.<|return|>",
    ])
    session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
    events = list(tool_turn(session, "What is 6*7?", ToolRegistry([calculate])))
    result = events[-1]
    assert isinstance(result, TurnResult) and result.reason == "answer"
    ran = [e for e in events if isinstance(e, ToolsRan)]
    assert ran[0].outcomes[0].ok and ran[0].outcomes[0].content == {"expression": "6*7", "result": 42}
    follow_up = client.encoding.decode(client.prompts[1])
    assert "Need to multiply." in follow_up and "namespace functions {" in follow_up
    assert '<|start|>functions.calculate to=assistant<|channel|>commentary<|message|>{"ok": true' in follow_up
    assert session.conversation.messages[-1].text == "It is 42."


def test_real_model_call_is_constrained_executed_and_answered(tiny_client: Any) -> None:
    session = ChatSession(tiny_client, get_template("harmony"), sampling=Sampling(temperature=1.0, seed=3),
                          max_tokens=120, thinking_budget=16)
    events = list(tool_turn(session, "Square a number.", ToolRegistry([square]), tool_choice="square", max_calls=3))
    result = events[-1]
    assert isinstance(result, TurnResult)
    first = result.records[0]
    sent = json.loads(first.arguments_sent)
    assert first.tool == "functions.square" and 0 <= sent["n"] <= 99
    assert first.outcome.ok and first.outcome.content == sent["n"] ** 2
    roles = [m.author.role for m in session.conversation.messages]
    assert Role.TOOL in roles and roles.index(Role.TOOL) > roles.index(Role.USER)
    reply = next(m for m in session.conversation.messages if m.author.role is Role.TOOL)
    assert json.loads(reply.text) == {"ok": True, "content": sent["n"] ** 2}
    assert result.reason in ("answer", "loop cap", "no answer")


def test_tools_cli(tiny_model: Any) -> None:
    import subprocess
    import sys

    listed = subprocess.run([sys.executable, "-m", "app", "tools", "list"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "functions.calculate" in listed.stdout and "read-only" in listed.stdout
    base = [sys.executable, "-m", "app", "chat", "--model", str(tiny_model), "--prompt", "Compute.", "--threads", "1",
            "--ctx", "1024", "--max-tokens", "120", "--seed", "1", "--tool-choice", "current_time",
            "--thinking-budget", "8", "--tools", "current_time"]
    allowed = subprocess.run([*base, "--yes"], capture_output=True, text=True, timeout=300)
    assert allowed.returncode == 0, allowed.stderr
    assert "[tool call_1]" in allowed.stderr
    denied = subprocess.run(base, input="n\n" * 10, capture_output=True, text=True, timeout=300)
    assert "Run current_time (read-only) with" in denied.stderr and "E-TOOL-DENIED" in denied.stderr
    unknown = subprocess.run([*base[:-1], "teleport"], capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "no tool or plugin called teleport" in unknown.stderr and "current_time" in unknown.stderr


def test_approval_is_asked_and_answered_as_events_that_every_frontend_folds() -> None:
    """The tool host says each request and its answer in the event union, before the result:
    the reply builder (the window's and the terminal's) turns them into the card's states."""
    import io

    from app.cli.terminal_reply import TerminalReply
    from app.domain.events import ToolCallDecided, ToolCallRequested
    from app.domain.history import Reply
    from app.tools.calls import Decision

    client = ScriptedClient([
        '<|channel|>commentary to=functions.calculate <|constrain|>json<|message|>{"expression":"6*7"}<|call|>',
        "<|channel|>final<|message|>It is 42.<|return|>",
    ])
    session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
    edited = Decision(True, {"expression": "6*8"}, how="asked: allowed")
    err = io.StringIO()
    terminal = TerminalReply(False, io.StringIO(), err)
    builder = terminal.begin(Reply())
    states = []
    for event in tool_turn(session, "What is 6*7?", ToolRegistry([calculate]), approve=lambda _c: edited):
        terminal(event)
        cards = [s for s in builder.reply.segments if s.kind == "tool"]
        if isinstance(event, ToolCallRequested | ToolCallDecided | ToolsRan):
            states.append((type(event).__name__, cards[0].data["state"]))
    assert states == [("ToolCallRequested", "pending"), ("ToolCallDecided", "running"), ("ToolsRan", "ok")]
    card = next(s for s in builder.reply.segments if s.kind == "tool")
    assert '"6*8"' in card.data["arguments"] and card.data["decision"] == "asked: allowed, arguments edited"
    said = err.getvalue()
    assert "calculate (read-only)" in said and "functions.calculate" not in said and "runs: asked: allowed, arguments edited" in said
    assert '"result": 48' in said


def test_a_tool_call_on_the_final_channel_is_kept_as_commentary_in_the_terminal() -> None:
    """W08 through the terminal chat's path: the stored call is on `commentary`, the chain's
    analysis stays in the follow-up prompt, and only the real answer is printed."""
    import io

    from app.cli.terminal_reply import TerminalReply
    from app.domain.history import Reply
    from app.domain.messages import user_message
    from app.engine.turn.run import TurnRequest, run_turn

    client = ScriptedClient([
        "<|channel|>analysis<|message|>Need the sum.<|end|><|start|>assistant<|channel|>final"
        ' to=functions.calculate <|constrain|>json<|message|>{"expression":"1+1"}<|call|>',
        "<|channel|>final<|message|>Two.<|return|>",
    ])
    session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
    out = io.StringIO()
    terminal = TerminalReply(False, out, io.StringIO())
    terminal.begin(Reply())
    for event in run_turn(session, TurnRequest(message=user_message("Add"), tools=ToolRegistry([calculate]))):
        terminal(event)
    call = next(m for m in session.conversation.messages if m.recipient == "functions.calculate")
    assert call.channel == "commentary"
    follow_up = client.encoding.decode(client.prompts[1])
    assert "Need the sum." in follow_up and "<|channel|>final to=" not in follow_up
    assert out.getvalue() == "Two.\n"


def test_a_card_decided_before_the_question_arrives_answers_it() -> None:
    """The window shows the card as soon as the call's event arrives; the engine thread's
    question may reach the loop a moment later. A click in between is kept, not lost."""
    import asyncio

    from app.controllers.approvals import WindowApprovals
    from app.tools.calls import PendingCall

    approvals = WindowApprovals()
    approvals.decide("call-1", False)
    remember, decision = asyncio.run(approvals.wait(PendingCall("call-1", calculate, {}), stopped=False))
    assert remember is None and decision.allow is False
    approvals.decide("call-2", True, {"expression": "1+1"})
    approvals.stop()  # Stop forgets early answers: the call is denied as stopped
    _, stopped = asyncio.run(approvals.wait(PendingCall("call-2", calculate, {}), stopped=True))
    assert not stopped.allow and stopped.how == "stopped by the user"


def test_the_turn_timeline_lays_generations_and_tool_calls_end_to_end() -> None:
    """The reply builder's timeline: each generation's prompt evaluation and decoding, then the
    tool calls side by side, then the next generation — on one time axis from the turn's start."""
    from app.domain.events import (
        CallOutcome,
        FinishReason,
        GenerationDone,
        Timings,
        TokenScored,
        ToolsRan,
    )
    from app.domain.history import Reply, Segment
    from app.domain.reply import ReplyBuilder

    builder = ReplyBuilder(Reply())
    card = {"tool": "functions.calculate", "call_id": "c1", "state": "running"}
    builder.reply.segments.append(Segment("tool", data=card))
    for t in (30.0, 40.0, 50.0):
        builder.apply(TokenScored(1, -0.1, (), t))
    builder.apply(GenerationDone(FinishReason.STOP, None, Timings(first_token_ms=30.0, total_ms=50.0, generated=3)))
    builder.apply(ToolsRan((CallOutcome("c1", True, 1, duration_ms=20.0),)))
    builder.apply(TokenScored(2, -0.2, (), 10.0))
    builder.apply(GenerationDone(FinishReason.STOP, None, Timings(first_token_ms=10.0, total_ms=15.0, generated=1)))
    debug = builder.reply.debug
    assert debug.spans == [("prompt", 0.0, 30.0), ("decode", 30.0, 50.0), ("tool functions.calculate", 50.0, 70.0),
                           ("prompt", 70.0, 80.0), ("decode", 80.0, 85.0)]
    assert debug.token_times == [30.0, 40.0, 50.0, 80.0]
    again = ReplyBuilder(builder.reply)  # Continue: the timeline goes on where it ended
    again.apply(GenerationDone(FinishReason.STOP, None, Timings(first_token_ms=1.0, total_ms=2.0, generated=1)))
    assert debug.spans[-2:] == [("prompt", 85.0, 86.0), ("decode", 86.0, 87.0)]
