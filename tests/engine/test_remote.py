"""Remote endpoints against a real OpenAI-compatible server on loopback (llama-cpp-python's own
server with the default model), directly and through a fault-injecting proxy."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.constrain.constraint import ResponseFormat
from app.domain.endpoint import Endpoint
from app.domain.events import (
    ContentDelta,
    FinishReason,
    GenerationDone,
    JsonChecked,
    MessageDone,
    ParseIssue,
    TurnFailed,
)
from app.domain.messages import Conversation, DeveloperContent, Message, Role, user_message
from app.domain.sampling import Sampling
from app.engine.remote.session import RemoteSession
from app.engine.remote.wire import to_openai
from tests.fault_proxy import FaultProxy
from tests.turns import send, tool_turn

GREEDY = Sampling(temperature=0.0, seed=1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(model: Any) -> tuple[int, subprocess.Popen[bytes]]:
    """llama-cpp-python's server with `model` on a free loopback port, once it answers."""
    port = _free_port()
    script = Path(__file__).resolve().parents[1] / "llama_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(model), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return port, proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                pytest.fail(f"the llama-cpp-python server did not start: {err[-2000:]}")
            time.sleep(0.5)


@pytest.fixture(scope="module")
def server(gemma_model: Any) -> Iterator[int]:
    port, proc = start_server(gemma_model)
    yield port
    proc.terminate()
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()


@pytest.fixture
def proxy(server: int) -> Iterator[FaultProxy]:
    p = FaultProxy(server)
    yield p
    p.close()


def endpoint(url: str, **values: Any) -> Endpoint:
    """The loopback endpoint; its context set, so no request but the test's own is sent (the
    context a server says is learned in `tests/engine/test_remote_context.py`)."""
    return Endpoint(name="loopback", base_url=url, model="gemma", **{"context": 8192, **values})


def run(session: RemoteSession, text: str, **kwargs: Any) -> list[Any]:
    return list(send(session, text, **kwargs))


def test_a_streamed_answer_arrives_as_events_with_timings(server: int) -> None:
    session = RemoteSession(endpoint(f"http://127.0.0.1:{server}/v1"), None, sampling=GREEDY, max_tokens=10)
    events = run(session, "The capital of France is")
    deltas = [e.text for e in events if isinstance(e, ContentDelta)]
    done = [e for e in events if isinstance(e, GenerationDone)]
    assert len(deltas) > 1 and done and done[0].reason is FinishReason.LENGTH  # max_tokens reached
    assert done[0].timings.generated == 10 and done[0].timings.first_token_ms > 0
    answer = session.conversation.messages[-1]
    assert answer.channel == "final" and answer.text == "".join(deltas) and "Paris" in answer.text
    again = run(session, "And of Italy?")  # the history goes with the next request
    assert any(isinstance(e, GenerationDone) for e in again)
    assert [m.author.role for m in session.conversation.messages] == [Role.USER, Role.ASSISTANT] * 2


def test_stop_words_json_object_and_cancel(server: int) -> None:
    url = f"http://127.0.0.1:{server}/v1"
    stopped = RemoteSession(endpoint(url), None, sampling=GREEDY, max_tokens=40)
    events = run(stopped, "Count: 1, 2, 3,", stops=("7",))
    assert "7" not in stopped.conversation.messages[-1].text
    assert next(e for e in events if isinstance(e, GenerationDone)).reason is FinishReason.STOP
    strict = RemoteSession(endpoint(url), None, sampling=GREEDY, max_tokens=40)
    checked = [e for e in run(strict, "A JSON object:", response_format=ResponseFormat(type="json_object"))
               if isinstance(e, JsonChecked)]
    assert checked and checked[0].result.valid and isinstance(checked[0].result.value, dict)
    cancel = threading.Event()
    slow = RemoteSession(endpoint(url), None, sampling=GREEDY, max_tokens=200)
    seen: list[Any] = []
    for event in send(slow, "The capital of France is", cancel=cancel):
        seen.append(event)
        if isinstance(event, ContentDelta) and sum(isinstance(e, ContentDelta) for e in seen) == 3:
            cancel.set()
    done = next(e for e in seen if isinstance(e, GenerationDone))
    assert done.reason is FinishReason.CANCELLED and sum(isinstance(e, ContentDelta) for e in seen) <= 4
    assert slow.conversation.messages[-1].text  # the partial answer is kept


@pytest.mark.parametrize("status", ["401", "403"])
def test_a_refused_key_says_which_key_and_how_to_set_it(proxy: FaultProxy, status: str) -> None:
    proxy.faults = [status]
    session = RemoteSession(endpoint(proxy.url, key_name="work-key"), "sk-test-123", sampling=GREEDY)
    events = run(session, "Hello")
    failed = events[-1]
    assert isinstance(failed, TurnFailed) and f"({status})" in failed.reason
    assert "work-key" in failed.reason and "harmony-desk keys set work-key" in failed.reason
    assert "sk-test-123" not in failed.reason and "sk-test-123" not in repr(session)
    assert proxy.requests[0][2].get("authorization") == "Bearer sk-test-123"  # the key went to the server
    assert session.conversation.messages[-1].text == "Hello"  # the conversation is kept


def test_an_unknown_model_lists_what_the_server_offers(proxy: FaultProxy) -> None:
    proxy.faults = ["404"]
    events = run(RemoteSession(endpoint(proxy.url), None), "Hello")
    assert isinstance(events[-1], TurnFailed) and "it offers: gemma" in events[-1].reason


def test_rate_limits_and_server_errors_are_waited_out_and_said(proxy: FaultProxy) -> None:
    proxy.faults = ["429", "500"]
    waits: list[float] = []
    session = RemoteSession(endpoint(proxy.url), None, sampling=GREEDY, max_tokens=4, sleep=waits.append)
    events = run(session, "The capital of France is")
    notes = [e.message for e in events if isinstance(e, ParseIssue)]
    assert "rate limiting (429); waiting 1 s" in notes[0] and "server error 500; trying again in 2 s" in notes[1]
    assert abs(sum(waits) - 3.0) < 0.3  # Retry-After 1 s, then a 2 s backoff
    assert isinstance(events[-1], GenerationDone) and session.conversation.messages[-1].text
    proxy.faults = ["500"] * 3
    gives_up = RemoteSession(endpoint(proxy.url, retries=2), None, sleep=lambda s: None)
    failed = run(gives_up, "Hello")[-1]
    assert isinstance(failed, TurnFailed) and "failed 3 times (server error 500)" in failed.reason


def test_a_cut_stream_keeps_the_partial_answer_as_truncated(proxy: FaultProxy) -> None:
    proxy.faults = ["cut"]
    session = RemoteSession(endpoint(proxy.url), None, sampling=GREEDY, max_tokens=40)
    events = run(session, "The capital of France is")
    assert isinstance(events[-1], TurnFailed) and events[-1].reason.startswith("E-STREAM-TRUNCATED")
    done = next(e for e in events if isinstance(e, MessageDone))
    assert not done.complete and done.message.text  # what arrived is kept, marked incomplete
    assert session.conversation.messages[-1].text == done.message.text


def test_a_slow_server_times_out_and_the_turn_fails(proxy: FaultProxy) -> None:
    proxy.faults = ["slow", "slow"]
    session = RemoteSession(endpoint(proxy.url, timeout_s=0.5, retries=1), None, sleep=lambda s: None)
    events = run(session, "Hello")
    assert isinstance(events[-1], TurnFailed) and "no answer within the time limit" in events[-1].reason
    assert len([r for r in proxy.requests if r[0] == "POST"]) == 2


def test_what_is_sent_is_the_visible_conversation_with_calls_paired() -> None:
    conversation = Conversation(
        messages=(
            Message.of(Role.DEVELOPER, DeveloperContent(instructions="Be brief.")),
            Message.of(Role.USER, "Weather?"),
            Message.of(Role.ASSISTANT, "secret reasoning", channel="analysis"),
            Message.of(Role.ASSISTANT, '{"city":"Oslo"}', channel="commentary", recipient="functions.weather"),
            Message(author=Message.of(Role.TOOL, "x").author.model_copy(update={"name": "functions.weather"}),
                    content=Message.of(Role.TOOL, '{"temp":3}').content, channel="commentary"),
            Message.of(Role.ASSISTANT, "3 degrees.", channel="final"),
        )
    )
    sent = to_openai(conversation)
    assert "secret reasoning" not in str(sent)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant"]
    call = sent[2]["tool_calls"][0]
    assert call["function"] == {"name": "weather", "arguments": '{"city":"Oslo"}'}
    assert sent[3]["tool_call_id"] == call["id"] and sent[4]["content"] == "3 degrees."


def test_a_tool_call_from_the_server_runs_through_the_shared_turn_loop(proxy: FaultProxy) -> None:
    import json

    from app.domain.events import ToolsRan, TurnResult
    from app.tools.api import tool
    from app.tools.registry import ToolRegistry

    @tool
    def square(x: int) -> int:
        """Square a number."""
        return x * x

    session = RemoteSession(endpoint(proxy.url), None, sampling=GREEDY, max_tokens=30)
    events = list(tool_turn(session, "Square 7.", ToolRegistry([square]), tool_choice="square", max_calls=1))
    ran = [e for e in events if isinstance(e, ToolsRan)]
    assert ran and ran[0].outcomes[0].ok and isinstance(ran[0].outcomes[0].arguments["x"], int)
    assert isinstance(events[-1], TurnResult)
    first, follow_up = (json.loads(b) for b in proxy.bodies if b)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "square"}}
    assert first["tools"][0]["function"]["name"] == "square"
    call = next(m for m in follow_up["messages"] if m.get("tool_calls"))["tool_calls"][0]
    result = next(m for m in follow_up["messages"] if m["role"] == "tool")
    assert call["function"]["name"] == "square" and result["tool_call_id"] == call["id"]
    assert json.loads(result["content"]) == {"ok": True, "content": ran[0].outcomes[0].content}


def test_the_response_id_and_logprobs_come_back_for_the_debug_pane(server: int) -> None:
    from app.domain.events import RequestSent, ResponseReceived

    session = RemoteSession(endpoint(f"http://127.0.0.1:{server}/v1", top_logprobs=2), None,
                            sampling=GREEDY, max_tokens=4)
    events = run(session, "The capital of France is")
    sent = next(e for e in events if isinstance(e, RequestSent))
    assert sent.body["logprobs"] is True and sent.body["top_logprobs"] == 2
    assert sent.body["messages"] == [{"role": "user", "content": "The capital of France is"}]
    said = next(e for e in events if isinstance(e, ResponseReceived))
    assert said.response_id and said.finish_reason == "length"
    assert len(said.logprobs) == 4 and all(lp <= 0 for _, lp in said.logprobs)
    assert "".join(t for t, _ in said.logprobs) == session.conversation.messages[-1].text
    assert len(said.top) == 4 and all(len(alts) == 2 for alts in said.top)  # the alternatives too
    from app.domain.history import Reply
    from app.domain.reply import ReplyBuilder

    builder = ReplyBuilder(Reply())  # what the debug pane's strip shows for a remote answer
    for event in events:
        builder.apply(event)
    scores = builder.reply.debug.text_scores
    assert [(t, lp) for t, lp, _ in scores] == list(said.logprobs) and all(len(top) == 2 for _, _, top in scores)


def test_gpt_oss_markup_passed_through_as_text_never_shows_analysis_as_answer(proxy: FaultProxy) -> None:
    from app.domain.visibility import Lane

    proxy.faults = ["canned"]
    proxy.canned = ["<|chan", "nel|>analysis<|message|>The user wants", " a capital.<|e", "nd|><|start|>assistant",
                    "<|channel|>final<|message|>Par", "is.<|return|>"]
    session = RemoteSession(endpoint(proxy.url), None)
    events = run(session, "Capital of France?")
    shown = "".join(e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER)
    thought = "".join(e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANALYSIS)
    assert shown == "Paris." and thought == "The user wants a capital."
    assert [(m.channel, m.text) for m in session.conversation.messages[1:]] == [
        ("analysis", "The user wants a capital."), ("final", "Paris.")]
    assert all(e.complete for e in events if isinstance(e, MessageDone))


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_a_server_returns_goes_to_analysis(proxy: FaultProxy, field: str) -> None:
    from app.domain.visibility import Lane

    proxy.faults = ["canned"]
    proxy.canned = [{field: "Thinking about "}, {field: "capitals."}, {"content": "Paris."}]
    session = RemoteSession(endpoint(proxy.url), None)
    events = run(session, "Capital of France?")
    lanes = [(e.lane, e.text) for e in events if isinstance(e, ContentDelta)]
    assert lanes == [(Lane.ANALYSIS, "Thinking about "), (Lane.ANALYSIS, "capitals."), (Lane.ANSWER, "Paris.")]
    assert [(m.channel, m.text) for m in session.conversation.messages[1:]] == [
        ("analysis", "Thinking about capitals."), ("final", "Paris.")]
    follow_up = list(send(session, "And Italy?"))  # analysis is never sent back
    assert follow_up and "Thinking about" not in proxy.bodies[-1].decode()


@pytest.mark.parametrize("shape", ["thinking", "databricks"])
def test_every_reasoning_shape_lands_in_analysis_and_is_never_sent_back(proxy: FaultProxy, shape: str) -> None:
    """Databricks serving endpoints for reasoning models send `content` as typed parts, in
    deltas as in messages (ellmer #822, chatlas #392); others send a `thinking` field."""
    from app.domain.visibility import Lane

    proxy.faults = ["canned"]
    if shape == "thinking":
        proxy.canned = [{"thinking": "Thinking about "}, {"thinking": "capitals."}, {"content": "Paris."}]
    else:
        proxy.canned = [
            {"content": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Thinking about "}]}]},
            {"content": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "capitals."}]}]},
            {"content": [{"type": "text", "text": "Paris."}]},
        ]
    session = RemoteSession(endpoint(proxy.url), None)
    events = run(session, "Capital of France?")
    lanes = [(e.lane, e.text) for e in events if isinstance(e, ContentDelta)]
    assert lanes == [(Lane.ANALYSIS, "Thinking about "), (Lane.ANALYSIS, "capitals."), (Lane.ANSWER, "Paris.")]
    assert not any(isinstance(e, TurnFailed) for e in events)
    assert [(m.channel, m.text) for m in session.conversation.messages[1:]] == [
        ("analysis", "Thinking about capitals."), ("final", "Paris.")]
    follow_up = list(send(session, "And Italy?"))
    sent = proxy.bodies[-1].decode()
    assert follow_up and "Thinking about" not in sent and '"type": "reasoning"' not in sent


@pytest.mark.parametrize("case_id", ["W08_hybrid_header", "W09_stray_commentary_prefix", "W10c_unknown_channel_decided_by_return",
                                     "W06_control_tokens_in_header"])
def test_markup_passed_through_as_text_reads_as_local_ids_read(proxy: FaultProxy, case_id: str, encoding: Any) -> None:
    """The remote text reader once misrouted these (a call shown as the answer, reasoning as
    a preamble, a final swallowed); now the same token parser reads both."""
    from app.domain.visibility import Lane
    from app.harmony.parser import StreamParser
    from tests.harmony.test_parser_catalogue import CASES

    wild = CASES[case_id].wild
    local = StreamParser(encoding).parse(encoding.encode_with_specials(wild))
    local_done = [e for e in local.events if isinstance(e, MessageDone)]
    proxy.faults = ["canned"]
    proxy.canned = [wild[i:i + 5] for i in range(0, len(wild), 5)]
    session = RemoteSession(endpoint(proxy.url, text_calls=True), None)  # a raw server: calls as text
    events = run(session, "Go")
    done = [e for e in events if isinstance(e, MessageDone)]
    assert [(e.lane, e.message.recipient, e.message.text) for e in done] == [
        (e.lane, e.message.recipient, e.message.text) for e in local_done]
    shown = "".join(e.message.text for e in done if e.lane is Lane.ANSWER)
    assert shown == "".join(e.message.text for e in local_done if e.lane is Lane.ANSWER)


def test_a_gpt_oss_endpoint_that_parses_harmony_itself_streams_its_plain_answer() -> None:
    """Plain text from a gpt-oss endpoint (the server parsed Harmony) streams as the answer
    once it cannot be markup, and is kept whole; raw markup from the same model is parsed."""
    from app.domain.visibility import Lane
    from app.engine.local.scripted import ScriptedServer

    answer = "Paris is the capital of France. " * 12
    chunks = [answer[i:i + 20] for i in range(0, len(answer), 20)]
    gpt_oss = Endpoint(name="oss", base_url="http://oss.invalid/v1", model="gpt-oss-20b")
    session = RemoteSession(gpt_oss, None, client=ScriptedServer([chunks]))
    events = run(session, "Capital?")
    deltas = [e for e in events if isinstance(e, ContentDelta)]
    assert deltas and all(e.lane is Lane.ANSWER for e in deltas) and len(deltas) > 1  # it streamed
    assert [(m.channel, m.text) for m in session.conversation.messages[1:]] == [("final", answer)]
    raw_server = gpt_oss.model_copy(update={"text_calls": True})  # its server passes markup through
    raw = RemoteSession(raw_server, None, client=ScriptedServer([[" to=functions.f<|channel|>commentary",
                                                                  " json<|message|>{}<|call|>"]]))
    called = [e for e in run(raw, "Go") if isinstance(e, MessageDone)]
    assert [(e.lane, e.message.recipient) for e in called] == [(Lane.TOOL_CALL, "functions.f")]


def test_a_databricks_reasoning_answer_shows_the_same_in_the_window_and_the_terminal(
    proxy: FaultProxy, qtbot: Any, qloop: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typed content parts once failed the turn or lost the answer; the window and the terminal
    now show the same answer, and the reasoning only in the debug record."""
    import io

    from app.cli.terminal_reply import TerminalReply
    from app.controllers.remote_host import RemoteHost
    from app.domain.history import Reply
    from app.engine.turn.run import TurnRequest, run_turn
    from app.secrets import Secrets
    from app.settings import load_settings, save_settings
    from tests.ui.test_window import make_window, send

    proxy.faults = ["canned"]
    canned = [
        {"content": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Thinking about "}]}]},
        {"content": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "capitals."}]}]},
        {"content": [{"type": "text", "text": "Paris"}]},
        {"content": [{"type": "text", "text": "."}]},
    ]
    proxy.canned = list(canned)
    out = io.StringIO()
    terminal = TerminalReply(False, out, io.StringIO())
    said = terminal.begin(Reply())
    for event in run_turn(RemoteSession(endpoint(proxy.url), None), TurnRequest(message=user_message("Capital of France?"))):
        terminal(event)
    assert out.getvalue() == "Paris.\n" and said.reply.debug.analysis.startswith("Thinking about capitals.")

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    save_settings(load_settings().with_endpoint(endpoint(proxy.url)))
    window, _ = make_window(qtbot, tmp_path, [])
    from keyring.backends.fail import Keyring as NoKeyring

    window.controller.remote = RemoteHost(Secrets(NoKeyring()))  # this endpoint needs no key
    window.controller.doc.endpoint = endpoint(proxy.url).name
    proxy.faults, proxy.canned = ["canned"], list(canned)
    send(qtbot, window, "Capital of France?", timeout=30_000)
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None and reply.state == "done", reply
    assert [(s.kind, s.text) for s in reply.segments] == [(s.kind, s.text) for s in said.reply.segments]
    assert [(s.kind, s.text) for s in reply.segments] == [("answer", "Paris.")]
    assert reply.debug.analysis.startswith("Thinking about capitals.")
    assert "Thinking" not in window.transcript.turns[-1].segments[0].toPlainText()  # type: ignore[attr-defined]


def test_calls_a_server_passes_through_as_text_are_read_with_the_endpoints_call_format() -> None:
    """A server that does not parse tool calls (a llama.cpp server without --jinja, a raw
    completion proxy) streams the model's own markup as content: with the endpoint's call format
    it is read as the local parser reads it, the call runs through the shared turn loop, and
    markup that is no valid call is said, never shown as answer text and never run."""
    from app.domain.events import ParseIssue, ToolsRan, TurnResult
    from app.domain.visibility import Lane
    from app.engine.local.scripted import ScriptedServer
    from app.tools.builtin.everyday import calculate
    from app.tools.registry import ToolRegistry

    qwen = Endpoint(name="qwen", base_url="http://qwen.invalid/v1", model="qwen3-8b", tool_calls="hermes")
    call = ['Let me work it out.\n<tool', '_call>\n{"name": "calcu', 'late", "arguments": {"expression": "6*7"}}\n</tool_', 'call>']
    server = ScriptedServer([call, ["It is 42."]])
    session = RemoteSession(qwen, None, client=server)
    events = list(tool_turn(session, "What is 6*7?", ToolRegistry([calculate])))
    result = events[-1]
    assert isinstance(result, TurnResult) and result.reason == "answer", result
    ran = [e for e in events if isinstance(e, ToolsRan)]
    assert ran and ran[0].outcomes[0].ok and ran[0].outcomes[0].content["result"] == 42
    shown = "".join(e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER)
    assert shown == "Let me work it out.\nIt is 42." and "<tool" not in shown
    bad = RemoteSession(qwen, None, client=ScriptedServer([['<tool_call>\n{"name": "calculate", "arguments": </tool_call>']]))
    said = [e for e in run(bad, "Go") if isinstance(e, ParseIssue)]
    assert said and "The model tried to call calculate; the call was not valid" in said[0].message
    assert not any(m.recipient for m in bad.conversation.messages)  # nothing to run
    plain = Endpoint(name="plain", base_url="http://plain.invalid/v1", model="m")  # no format: text stays text
    raw = RemoteSession(plain, None, client=ScriptedServer([["<tool_call>{}</tool_call>"]]))
    assert "".join(e.text for e in run(raw, "Go") if isinstance(e, ContentDelta)) == "<tool_call>{}</tool_call>"
