"""`bench/agent_clients.py`'s judgement of a turn, without a client or a server: an answer read to
its API's last event is whole though the client hung up first; a Responses answer that reached
the cap fails the turn on either server, counted from its usage (llama-server says `completed`
for it), while a Messages answer at the cap does not (Claude Code continues it itself); the
prompt figures come from each API's own usage fields; the last line sums what its docstring
says."""

from __future__ import annotations

import json
from typing import Any

from bench.agent_clients import last_line
from bench.agent_clients_kit import Ran
from bench.agent_clients_proxy import Exchange, read_body
from bench.agent_clients_session import Session, Turn

DONE = Ran(seconds=2.0, status=0, output="ok")


def answered(path: str, events: list[dict[str, Any]], ended: bool = True) -> Exchange:
    """A POST answered 200 whose stream carried `events` (each as the API names its events)."""
    x = Exchange("POST", path, {}, b"{}", status=200, ended=ended)
    text = "".join(f"event: {e.get('type', 'message')}\ndata: {json.dumps(e)}\n\n" for e in events)
    read_body(x, text.encode(), "")
    return x


def responses(output: int, status: str = "completed", prompt: int = 100, cached: int = 90) -> Exchange:
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": output}
    return answered("/v1/responses", [{"type": f"response.{status}", "response": {"usage": usage}}])


def messages(output: int, prompt: int = 50, read: int = 40) -> Exchange:
    start = {"type": "message_start", "message": {"usage": {"input_tokens": prompt, "cache_read_input_tokens": read}}}
    delta = {"type": "message_delta", "usage": {"output_tokens": output}}
    return answered("/v1/messages", [start, delta, {"type": "message_stop"}])


def test_an_answer_read_to_its_last_event_is_whole_though_the_stream_did_not_close() -> None:
    assert responses(10).whole
    hung_up = answered("/v1/responses", [{"type": "response.completed", "response": {}}], ended=False)
    assert hung_up.whole
    cut_off = answered("/v1/responses", [{"type": "response.output_text.delta", "delta": "x"}], ended=False)
    assert not cut_off.whole


def test_a_responses_answer_at_the_cap_fails_the_turn_though_the_server_said_completed() -> None:
    turn = Turn.ended(0, DONE, [responses(1024)], cap=1024)
    assert turn.cut == 1 and not turn.completed
    assert turn.stopped == "turn 1: 1 answer(s) cut at the cap of 1024 tokens"
    assert Turn.ended(0, DONE, [responses(1023)], cap=1024).completed
    assert Turn.ended(0, DONE, [responses(1024)]).completed  # no cap given: a cut is no failure


def test_a_messages_answer_at_the_cap_is_left_to_the_client() -> None:
    turn = Turn.ended(0, DONE, [messages(1024), messages(12)], cap=1024)
    assert turn.cut == 0 and turn.completed


def test_prompt_figures_come_from_each_apis_usage() -> None:
    assert responses(10, prompt=9_577, cached=9_500).prompt() == (9_577, 77)
    assert messages(10, prompt=52, read=21_449).prompt() == (21_501, 52)
    chat = answered("/v1/chat/completions", [{"usage": {"prompt_tokens": 800, "prompt_tokens_details": {"cached_tokens": 700}, "completion_tokens": 5}}])  # fmt: skip
    assert chat.prompt() == (800, 100) and chat.output_tokens() == 5


def test_the_last_line_sums_the_turns_both_servers_completed() -> None:
    def session(server: str, seconds: float, evaluated: int, turns: int = 3) -> Session:
        ran = Ran(seconds=seconds, status=0, output="ok")
        made = [Turn.ended(i, ran, [responses(5, prompt=1_000, cached=1_000 - evaluated)]) for i in range(turns)]
        return Session("codex", server, made)

    sessions = [session("ours", 1.0, 10), session("llama-server", 2.0, 30, turns=2)]
    line = last_line(sessions, ["codex"], 3)
    assert line == (
        "agent clients: 1/1 clients work (llama-server 0/1), turn-3 evaluated 0 of 0 tokens"
        " (llama-server 0), seconds per turn 0.50× llama-server"
    )
