"""Harmony's built-in python and browser tools in the turn loop: declaration, grammar, replies."""

from __future__ import annotations

import json
from typing import Any

import llguidance
import pytest
from llguidance.tiktoken import lltokenizer_from_encoding

from app.constrain.constraint import CallSpec, Constraint
from app.domain.builtin_tools import browser_namespace, python_namespace
from app.domain.events import ToolsRan, TurnResult
from app.domain.messages import Conversation, Message, Role, SystemContent
from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.engine.turn.loop import Generate, Generated, RunCalls, turn_loop
from app.engine.turn.tools import with_tools
from app.harmony import encoding as enc
from app.harmony.parser import parse_tokens
from app.templates.harmony_grammar import harmony_constraint
from app.templates.registry import get_template
from app.tools.builtin.everyday import calculate
from app.tools.runner import run_calls
from app.tools.session import ConversationTools, ToolOptions
from tests.turns import tool_turn


@pytest.fixture(scope="module")
def lltok() -> Any:
    return lltokenizer_from_encoding(enc.load_encoding()._tik, n_vocab=enc.N_VOCAB, eos_token=enc.RETURN)


def accepts(lltok: Any, constraint: Constraint, completion: str) -> bool:
    matcher = llguidance.LLMatcher(lltok, constraint.grammar, log_level=0)
    ids = enc.load_encoding().encode_with_specials(completion)
    return bool(matcher.consume_tokens(ids)) and not matcher.is_error() and matcher.is_stopped()


PY_CALL = "<|channel|>analysis to=python code<|message|>x = 6 * 7\nprint(x)<|call|>"
BROWSER_CALL = '<|channel|>analysis to=browser.find <|constrain|>json<|message|>{"pattern":"tea"}<|call|>'


def test_the_grammar_allows_declared_builtin_calls_only(lltok: Any) -> None:
    find = {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"],
            "additionalProperties": False}
    calls = [CallSpec("python", code=True), CallSpec("browser.find", schema=find)]
    grammar = harmony_constraint(None, tools={"calculate": None}, calls=calls)
    assert accepts(lltok, grammar, "<|channel|>analysis<|message|>Let me compute.<|end|><|start|>assistant" + PY_CALL)
    assert accepts(lltok, grammar, BROWSER_CALL)
    assert not accepts(lltok, grammar, BROWSER_CALL.replace('"tea"', "7"))
    assert not accepts(lltok, grammar, PY_CALL.replace("to=python", "to=browser.open"))
    only_python = harmony_constraint(None, calls=calls[:1], tool_choice="required")
    assert accepts(lltok, only_python, PY_CALL)
    assert not accepts(lltok, only_python, "<|channel|>final<|message|>Hi<|return|>")
    named = harmony_constraint(None, tools={"calculate": None}, calls=calls, tool_choice="calculate")
    assert not accepts(lltok, named, PY_CALL)


def test_builtins_are_declared_in_the_system_message_functions_in_the_developer_message() -> None:
    with ConversationTools(ToolOptions(enabled=("python", "browser", "calculate"))) as tools:
        conversation = with_tools(Conversation(messages=(Message.of(Role.USER, "Hi"),)), tools.registry)
    system, developer = conversation.messages[0].content[0], conversation.messages[1].content[0]
    assert isinstance(system, SystemContent)
    assert system.tools == {"browser": browser_namespace(), "python": python_namespace()}
    assert set(developer.tools or {}) == {"functions"}  # type: ignore[union-attr]
    ids = get_template("harmony").prompt_ids(conversation, ScriptedClient([]).encoding)  # type: ignore[arg-type]
    prompt = enc.load_encoding().decode(ids)
    assert "## browser\n\n// Tool for browsing." in prompt and "## python\n\nUse this tool to execute Python" in prompt
    assert "namespace functions {" in prompt and prompt.index("## python") < prompt.index("namespace functions")


def drive(tools: ConversationTools, script: list[str]) -> TurnResult:
    """The sans-I/O loop with scripted generations, calls run for real."""
    encoding = enc.load_encoding()

    loop = turn_loop(Conversation(messages=(Message.of(Role.USER, "Go"),)), tools.registry)
    action = next(loop)
    try:
        while True:
            if isinstance(action, Generate):
                text = script.pop(0)
                messages = parse_tokens(encoding.encode_with_specials(text)).messages
                action = loop.send(Generated(tuple(messages), called=text.endswith("<|call|>")))
            else:
                assert isinstance(action, RunCalls)
                action = loop.send(run_calls(action.calls))
    except StopIteration as stop:
        return stop.value


def test_python_is_stateful_replies_as_text_and_refusals_are_envelopes() -> None:
    script = [
        "<|channel|>analysis to=python code<|message|>x = 20<|call|>",
        "<|channel|>analysis to=python code<|message|>print(x * 2 + 2)<|call|>",
        "<|channel|>analysis to=python code<|message|>import socket\nsocket.socket()<|call|>",
        "<|channel|>final<|message|>42<|return|>",
    ]
    with ConversationTools(ToolOptions(enabled=("python",))) as tools:
        result = drive(tools, script)
    replies = [m for m in result.conversation.messages if m.author.role is Role.TOOL]
    assert [(m.author.name, m.channel, m.recipient) for m in replies] == [("python", "analysis", "assistant")] * 3
    assert replies[0].text == "(no output)" and replies[1].text == "42\n"
    refused = json.loads(replies[2].text)
    assert refused["ok"] is False and "Not supported" in refused["error"]["message"]
    assert result.reason == "answer"
    assert [r.tool for r in result.records] == ["python"] * 3
    assert result.records[1].arguments_sent == "print(x * 2 + 2)"
    assert result.records[1].outcome.arguments == {"code": "print(x * 2 + 2)"}


def test_a_builtin_that_is_not_enabled_is_refused_to_the_model() -> None:
    with ConversationTools(ToolOptions(enabled=("calculate",))) as tools:
        result = drive(tools, [PY_CALL, "<|channel|>final<|message|>ok<|return|>"])
    reply = next(m for m in result.conversation.messages if m.author.role is Role.TOOL)
    error = json.loads(reply.text)["error"]
    assert error["code"] == "E-CALL-SCHEMA" and "no tool 'python'" in error["message"]
    assert "functions.calculate" in error["message"] and reply.channel == "analysis"


def test_a_scripted_session_constrains_builtin_calls_and_keeps_the_chain(lltok: Any) -> None:
    client = ScriptedClient([
        "<|channel|>analysis<|message|>Compute it.<|end|><|start|>assistant" + PY_CALL,
        "<|channel|>final<|message|>It is 42.<|return|>",
    ])
    session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
    with ConversationTools(ToolOptions(enabled=("python", "calculate"))) as tools:
        events = list(tool_turn(session, "6*7?", tools.registry))
    ran = [e for e in events if isinstance(e, ToolsRan)]
    assert ran[0].outcomes[0].ok and ran[0].outcomes[0].content == "42\n"
    constraint = client.constraints[0]
    assert isinstance(constraint, Constraint)
    assert accepts(lltok, constraint, "<|channel|>analysis<|message|>Compute it.<|end|><|start|>assistant" + PY_CALL)
    follow_up = client.encoding.decode(client.prompts[1])
    assert "Compute it." in follow_up
    assert "<|start|>python to=assistant<|channel|>analysis<|message|>42\n<|end|>" in follow_up
    assert isinstance(events[-1], TurnResult) and events[-1].reason == "answer"


def test_real_model_builtin_call_is_constrained_and_executed_offline(tiny_client: Any) -> None:
    session = ChatSession(tiny_client, get_template("harmony"), sampling=Sampling(temperature=1.0, seed=5),
                          max_tokens=400, thinking_budget=12)
    options = ToolOptions(enabled=("browser",), offline=True)
    with ConversationTools(options) as tools:
        events = list(tool_turn(session, "Look it up.", tools.registry, tool_choice="required", max_calls=2))
    result = events[-1]
    assert isinstance(result, TurnResult) and result.records
    first = result.records[0]
    assert first.tool in ("browser.search", "browser.open", "browser.find")
    assert isinstance(json.loads(first.arguments_sent), dict)
    # offline: a search never runs; open and find have no page to show yet, or are offline
    assert not first.outcome.ok and first.outcome.error_code in ("E-OFFLINE", "E-TOOL-ERROR")
    if first.tool == "browser.search":
        assert first.outcome.error_code == "E-OFFLINE"
    reply = next(m for m in session.conversation.messages if m.author.role is Role.TOOL)
    assert reply.author.name == first.tool and reply.channel == "analysis"
    assert calculate.qualified_name not in [r.tool for r in result.records]
