"""The turn loop driven by a scripted model: calls, parallel calls, errors, timeouts, cancel,
denial, edited arguments, unknown tools and the loop cap (the flow tests of the tools issue)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from app.domain.events import TurnResult
from app.domain.messages import Conversation, Message, Role
from app.engine.turn.loop import Generate, Generated, RunCalls, turn_loop
from app.tools.api import ToolError, tool
from app.tools.builtin.everyday import calculate
from app.tools.calls import Decision, allow_all
from app.tools.registry import ToolRegistry
from app.tools.runner import run_calls


@tool(deadline_ms=200)
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "done"


@tool
def fails(kind: str) -> Any:
    """Fail in the requested way."""
    if kind == "tool-error":
        raise ToolError("the service said no")
    if kind == "bug":
        raise KeyError("oops")
    return object()  # not JSON


BARRIER = threading.Barrier(2)


@tool(deadline_ms=5000)
def meet(who: str) -> str:
    """Wait for the other caller: succeeds only when two calls run at the same time."""
    try:
        BARRIER.wait(timeout=2)
    except threading.BrokenBarrierError as exc:
        raise ToolError("nobody else was running") from exc
    return f"{who} met"


REGISTRY = ToolRegistry([calculate, slow, fails, meet])


def call(name: str, args: dict[str, Any] | str) -> Message:
    body = args if isinstance(args, str) else json.dumps(args)
    return Message.of(Role.ASSISTANT, body, channel="commentary", recipient=f"functions.{name}", content_type="<|constrain|>json")


def final(text: str) -> Message:
    return Message.of(Role.ASSISTANT, text, channel="final")


def analysis(text: str) -> Message:
    return Message.of(Role.ASSISTANT, text, channel="analysis")


def drive(script: list[list[Message]], *, approve: Callable[..., Decision] = allow_all,
          cancel: threading.Event | None = None, max_calls: int = 8) -> tuple[TurnResult, list[Conversation]]:
    """Run the loop: each Generate takes the next scripted generation."""
    seen: list[Conversation] = []
    loop = turn_loop(Conversation(messages=(Message.of(Role.USER, "Go"),)), REGISTRY, max_calls=max_calls)
    action = next(loop)
    try:
        while True:
            if isinstance(action, Generate):
                seen.append(action.conversation)
                produced = script.pop(0)
                called = any(m.recipient for m in produced)
                action = loop.send(Generated(tuple(produced), called))
            else:
                assert isinstance(action, RunCalls)
                action = loop.send(run_calls(action.calls, approve=approve, cancel=cancel))
    except StopIteration as stop:
        return stop.value, seen


def replies(result: TurnResult) -> list[dict[str, Any]]:
    return [json.loads(m.text) for m in result.conversation.messages if m.author.role is Role.TOOL]


def test_single_call_then_answer_keeps_the_chain_analysis() -> None:
    result, seen = drive([[analysis("Need math."), call("calculate", {"expression": "6*7"})], [final("42")]])
    assert result.reason == "answer" and replies(result) == [{"ok": True, "content": {"expression": "6*7", "result": 42}}]
    assert [m.text for m in seen[1].messages if m.channel == "analysis"] == ["Need math."]
    reply = next(m for m in result.conversation.messages if m.author.role is Role.TOOL)
    assert (reply.author.name, reply.recipient, reply.channel) == ("functions.calculate", "assistant", "commentary")
    assert result.records[0].outcome.ok and result.records[0].tool == "functions.calculate"


def test_two_parallel_calls_run_together_and_are_matched_by_call_id() -> None:
    script = [[call("meet", {"who": "a"}), call("meet", {"who": "b"}), call("calculate", {"expression": "1+1"})], [final("ok")]]
    result, _ = drive(script)  # run one after the other, the two `meet` calls could never meet
    assert replies(result) == [{"ok": True, "content": "a met"}, {"ok": True, "content": "b met"},
                               {"ok": True, "content": {"expression": "1+1", "result": 2}}]
    assert [r.call_id for r in result.records] == ["call_1", "call_2", "call_3"]


def test_invalid_arguments_go_back_to_the_model_which_retries() -> None:
    script = [[call("calculate", {"expr": "1"})], [call("calculate", "{not json")], [call("calculate", {"expression": "2+2"})], [final("4")]]
    result, _ = drive(script)
    first, second, third = replies(result)
    assert first["ok"] is False and first["error"]["code"] == "E-CALL-SCHEMA" and "expression" in first["error"]["message"]
    assert second["error"]["code"] == "E-CALL-SCHEMA"
    assert third == {"ok": True, "content": {"expression": "2+2", "result": 4}} and result.reason == "answer"


def test_timeout_cancel_denial_and_failures_are_envelopes() -> None:
    result, _ = drive([[call("slow", {"seconds": 1.0})], [final("late")]])
    assert replies(result)[0]["error"]["code"] == "E-TOOL-TIMEOUT"
    cancel = threading.Event()
    cancel.set()
    result, _ = drive([[call("slow", {"seconds": 0.1})], [final("x")]], cancel=cancel)
    assert replies(result)[0]["error"]["code"] == "E-TOOL-CANCELLED"
    result, _ = drive([[call("calculate", {"expression": "1"})], [final("x")]], approve=lambda c: Decision(False))
    assert replies(result)[0]["error"]["code"] == "E-TOOL-DENIED"
    result, _ = drive([[call("fails", {"kind": "tool-error"}), call("fails", {"kind": "bug"}), call("fails", {"kind": "object"})], [final("x")]])
    codes = [r["error"]["code"] for r in replies(result)]
    messages = [r["error"]["message"] for r in replies(result)]
    assert codes == ["E-TOOL-ERROR"] * 3 and messages[0] == "the service said no" and "KeyError" in messages[1]


def test_edited_arguments_are_run_and_recorded() -> None:
    edit = lambda c: Decision(True, {"expression": "10-3"})  # noqa: E731
    result, _ = drive([[call("calculate", {"expression": "1+1"})], [final("7")]], approve=edit)
    assert replies(result)[0]["content"]["result"] == 7
    record = result.records[0]
    assert json.loads(record.arguments_sent) == {"expression": "1+1"} and record.outcome.arguments == {"expression": "10-3"}


def test_unknown_tool_and_the_loop_cap() -> None:
    result, _ = drive([[call("teleport", {})], [final("no")]])
    error = replies(result)[0]["error"]
    assert error["code"] == "E-CALL-SCHEMA" and "functions.calculate" in error["message"]
    runaway = [[call("calculate", {"expression": "1"})] for _ in range(5)]
    result, _ = drive(runaway, max_calls=3)
    assert result.reason == "loop cap" and len(replies(result)) == 3


def test_every_record_says_how_it_was_approved_and_how_long_it_ran(tmp_path: Any) -> None:
    from app.tools.approval import ApprovalPolicy, ApprovalStore, Mode

    asked: list[str] = []

    def ask(c: Any) -> tuple[Mode | None, Decision]:
        asked.append(c.tool.qualified_name)
        return (Mode.ALWAYS, Decision(True)) if c.tool.name == "calculate" else (None, Decision(False))

    store = ApprovalStore(tmp_path / "approvals.json")
    policy = ApprovalPolicy(ask, store=store)
    script = [[call("calculate", {"expression": "1"}), call("slow", {"seconds": 0.05})], [call("calculate", {"expression": "2"})], [final("x")]]
    result, _ = drive(script, approve=policy)
    decisions = [(r.tool, r.outcome.decision) for r in result.records]
    assert decisions == [("functions.calculate", "asked: allowed"), ("functions.slow", "asked: denied"),
                         ("functions.calculate", "always allow")]
    assert asked == ["functions.calculate", "functions.slow"]  # "always" is not asked again
    assert result.records[0].outcome.duration_ms is not None and result.records[1].outcome.duration_ms is None
    assert store.load() == {"functions.calculate": Mode.ALWAYS}
    edited, _ = drive([[call("calculate", {"expression": "1"})], [final("x")]],
                      approve=lambda c: Decision(True, {"expression": "3"}, how="asked: allowed"))
    assert edited.records[0].outcome.decision == "asked: allowed, arguments edited"
