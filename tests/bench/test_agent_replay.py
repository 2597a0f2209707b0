"""`bench/agent_replay.py`'s workload (`bench/agent_workload.py`) and arithmetic, without a server:
the workload is the same on every run, a reply counts only when it ended whole with its usage, and
the last line says what its docstring says."""

from __future__ import annotations

import json

import pytest

from bench import agent_replay, agent_workload
from bench.agent_replay import Phase, figures, last_line
from bench.agent_replay_reply import Reply, fault
from bench.llama_server import take


def whole(text: str = "ok", finish: str = "stop", prompt: int = 100, cached: int = 90) -> Reply:
    usage = {"prompt_tokens": prompt, "prompt_tokens_details": {"cached_tokens": cached}}
    return Reply(sent=1.0, first=1.5, ended=2.0, text=text, finish=finish, done=True, usage=usage)


def test_the_workload_is_fixed_and_every_user_message_distinct() -> None:
    assert agent_workload.system_prompt() == agent_workload.system_prompt()
    assert len(agent_workload.tools()) == 10
    assert '"name": "ask_user"' in agent_workload.system_prompt()
    said = {agent_workload.user_message(s, t) for s in range(8) for t in range(6)}
    assert len(said) == 48
    assert agent_workload.user_message(2, 3) == agent_workload.user_message(2, 3)


def test_the_workload_has_the_sizes_its_docstring_says() -> None:
    assert 12_000 < len(agent_workload.system_prompt()) < 13_000
    said = [agent_workload.user_message(s, t) for s in range(8) for t in range(6)]
    lengths = sorted(map(len, said))
    assert 200 < lengths[0] <= lengths[-1] < 500
    assert agent_workload.system_message() == {
        "role": "system",
        "content": agent_workload.system_prompt(),
    }
    assert agent_workload.user_turn(2, 3) == {
        "role": "user",
        "content": agent_workload.user_message(2, 3),
    }


def test_a_whole_reply_counts_and_says_what_it_evaluated() -> None:
    assert fault(whole()) is None
    assert fault(whole(text="", finish="length")) is None  # cut before it said anything
    assert whole().evaluated == 10
    assert whole().first_token_s == 0.5
    assert Reply(sent=1.0, ended=2.0).first_token_s == 1.0  # no content: to the end


def test_a_reply_cut_short_empty_or_without_usage_does_not() -> None:
    assert "failed: HTTP 503" in str(fault(Reply(error="HTTP 503")))
    cut = whole()
    cut.done = False
    assert "before its finish reason" in str(fault(cut))
    assert "no usage" in str(fault(Reply(text="x", finish="stop", done=True)))
    assert "empty answer" in str(fault(whole(text="")))


def test_the_stream_is_read_as_both_servers_send_it() -> None:
    got = Reply()
    for chunk in (
        {"choices": [{"delta": {"content": "Hel"}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": "lo"}, "finish_reason": "length"}]},
        {"choices": [], "usage": whole().usage, "timings": {"prompt_n": 10}},
    ):
        take(got, "data: " + json.dumps(chunk))
    take(got, "data: [DONE]")
    assert (got.text, got.finish, got.done, got.evaluated) == ("Hello", "length", True, 10)
    assert got.timings == {"prompt_n": 10} and fault(got) is None


def phase(server: str, name: str, evaluated: int, wall: float, model: str = "m") -> Phase:
    return Phase(model, server, name, (whole(prompt=evaluated, cached=0),), wall)


def test_the_last_line_takes_the_worst_model() -> None:
    before, after = agent_replay.PHASES
    phases = [
        phase("ours", before, 100, 10.0), phase("ours", after, 5, 2.0),
        phase("llama-server", before, 100, 8.0), phase("llama-server", after, 100, 4.0),
        phase("ours", before, 50, 3.0, "g"), phase("ours", after, 50, 3.0, "g"),
        phase("llama-server", before, 100, 6.0, "g"), phase("llama-server", after, 100, 6.0, "g"),
    ]  # fmt: skip
    assert figures(phases, "m") == {"evaluated": 105 / 200, "wall": 1.0, "after restart": 0.05}
    assert last_line(phases, ["m", "g"]) == (
        "agent replay: evaluated 0.53× llama-server, wall 1.00× llama-server, after restart 0.50×"
    )


def test_servers_that_read_different_prompts_give_no_figures() -> None:
    before, after = agent_replay.PHASES
    same = [phase("ours", before, 100, 1.0), phase("ours", after, 100, 1.0),
            phase("llama-server", before, 103, 1.0), phase("llama-server", after, 97, 1.0)]  # fmt: skip
    agent_replay.same_prompts(same)
    dropped = [*same[:3], phase("llama-server", after, 3000, 1.0)]  # ours lost the system message
    with pytest.raises(agent_replay.Failed, match="ours read 100 prompt tokens, llama-server 3000"):
        agent_replay.same_prompts(dropped)
