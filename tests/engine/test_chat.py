"""The chat session: a scripted token source for the flow, and the real tiny model beside it."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.domain.events import (
    ContentDelta,
    GenerationDone,
    MessageDone,
    MessageStarted,
    TurnDone,
    TurnFailed,
)
from app.domain.messages import ReasoningEffort, Role, SystemContent
from app.domain.visibility import Lane
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.templates.registry import get_template
from tests.turns import send

TURN = ("<|channel|>analysis<|message|>The user greets; reply kindly.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Hello there!<|return|>")


def test_scripted_turns_route_analysis_away_from_the_answer() -> None:
    client = ScriptedClient([TURN, "<|channel|>final<|message|>Again!<|return|>"])
    session = ChatSession(client, get_template("harmony"), today=dt.date(2026, 11, 22))  # type: ignore[arg-type]
    events = list(send(session, "Hi", effort=ReasoningEffort.LOW))
    visible = "".join(e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER)
    assert visible == "Hello there!"
    assert any(isinstance(e, MessageStarted) and e.lane is Lane.ANALYSIS for e in events)
    assert isinstance(events[-1], GenerationDone) and isinstance(events[-2], TurnDone)
    list(send(session, "Once more"))
    roles = [(m.author.role, m.channel) for m in session.conversation.messages]
    assert roles == [(Role.SYSTEM, None), (Role.USER, None), (Role.ASSISTANT, "analysis"), (Role.ASSISTANT, "final"),
                     (Role.USER, None), (Role.ASSISTANT, "final")]
    system = session.conversation.messages[0].content[0]
    assert isinstance(system, SystemContent) and system.reasoning_effort is ReasoningEffort.LOW
    assert system.conversation_start_date == "2026-11-22"
    assert session.turns[0].reasoning_effort is ReasoningEffort.LOW
    text = client.encoding.decode(client.prompts[1])
    assert "Reasoning: low" in text and "The user greets" not in text  # prior analysis dropped
    assert text.endswith("<|start|>user<|message|>Once more<|end|><|start|>assistant")


def test_partial_output_of_a_cut_turn_is_kept() -> None:
    client = ScriptedClient(["<|channel|>final<|message|>Half of the answ"])
    session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
    events = list(send(session, "Tell me"))
    done = [e for e in events if isinstance(e, MessageDone)]
    assert done[0].message.text == "Half of the answ" and not done[0].complete
    assert session.conversation.messages[-1].text == "Half of the answ"


def test_real_model_session_reuses_the_cache_on_turn_two(tiny_client: Any) -> None:
    session = ChatSession(tiny_client, get_template("harmony"), max_tokens=12)
    first = list(send(session, "Hello"))
    second = list(send(session, "And again?"))
    assert isinstance(first[-1], GenerationDone) and isinstance(second[-1], GenerationDone)
    t1, t2 = first[-1].timings, second[-1].timings
    assert t2.prompt_reused > 0 and t2.prompt_reused >= t1.prompt_tokens - 30
    assert [m.author.role for m in session.conversation.messages][:2] == [Role.SYSTEM, Role.USER]
    assert all(not isinstance(e, TurnFailed) for e in first + second)


def test_headless_chat_command(tiny_model: Path, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "app", "chat", "--model", str(tiny_model), "--prompt", "Hi", "--max-tokens", "6",
           "--threads", "1", "--ctx", "512", "--show-analysis", "--reasoning-effort", "high"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Loaded gpt-oss model" in result.stderr and "template harmony" in result.stderr
    assert "tokens, first after" in result.stderr
    missing = subprocess.run([sys.executable, "-m", "app", "chat", "--model", str(tmp_path / "no.gguf"),
                              "--prompt", "Hi"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "Cannot load the model" in missing.stderr and "no such file" in missing.stderr


def test_template_and_sampling_choices_are_remembered_per_model(tiny_model: Path, tmp_path: Path) -> None:
    import os

    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path)}
    base = [sys.executable, "-m", "app", "chat", "--model", str(tiny_model), "--prompt", "Hi", "--max-tokens", "2",
            "--threads", "1", "--ctx", "256"]
    first = subprocess.run([*base, "--template", "chatml", "--temperature", "0.3"], capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0 and "template chatml" in first.stderr
    second = subprocess.run(base, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and "template chatml" in second.stderr
    from app.templates.choices import ChoiceStore

    stored = ChoiceStore(tmp_path / "models.json").get(tiny_model)
    assert (stored.template, stored.temperature) == ("chatml", 0.3)
    bad = subprocess.run([*base, "--template", "nope"], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "valid names" in bad.stderr
    assert ChoiceStore(tmp_path / "models.json").get(tiny_model).template == "chatml"
    hot = subprocess.run([*base, "--temperature", "9"], capture_output=True, text=True, env=env, timeout=300)
    assert hot.returncode == 2 and "temperature" in hot.stderr


def test_json_mode_for_the_whole_conversation_and_per_message() -> None:
    from app.constrain.constraint import JsonSchemaFormat, ResponseFormat
    from app.domain.events import JsonChecked

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fmt = ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(name="count", schema=schema))
    broken = '<|channel|>final<|message|>{"n":"x"}<|return|>'  # a scripted source ignores the grammar
    client = ScriptedClient(['<|channel|>final<|message|>{"n":3}<|return|>', broken, 'y"}<|return|>', 'z"}<|return|>',
                             '"n":"w"}<|return|>', "<|channel|>final<|message|>plain<|return|>"])  # the last from the member's key
    session = ChatSession(client, get_template("harmony"), response_format=fmt)  # type: ignore[arg-type]
    first = [e for e in send(session, "Count") if isinstance(e, JsonChecked)]
    second = [e for e in send(session, "Again") if isinstance(e, JsonChecked)]  # three retries, all broken
    assert first[0].result.valid and not second[0].result.valid and second[0].result.path == "/n"
    assert second[0].result.keyword == "type" and second[0].result.value == {"n": "w"}
    plain = [e for e in send(session, "Talk", response_format=ResponseFormat(type="text")) if isinstance(e, JsonChecked)]
    assert plain == []
    assert "# Response Formats" in client.encoding.decode(client.prompts[0])


def test_a_model_whose_own_template_loops_is_refused_and_runs_with_a_registry_template(
        tmp_path: Path) -> None:
    import os

    from tests.tiny_gpt_oss import build

    looping = ("{% set r = range(100000) %}{% for a in r %}{% for b in r %}{% for c in r %}"
               "{% endfor %}{% endfor %}{% endfor %}")
    model = build(chat_template=looping)
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path)}
    base = [sys.executable, "-m", "app", "chat", "--model", str(model), "--prompt", "Hi", "--max-tokens", "2",
            "--threads", "1", "--ctx", "256"]
    refused = subprocess.run([*base, "--template", "gguf-jinja"], capture_output=True, text=True, env=env, timeout=300)
    assert "ran longer than" in refused.stderr and "choose a built-in template" in refused.stderr
    assert "Traceback" not in refused.stderr
    works = subprocess.run([*base, "--template", "harmony"], capture_output=True, text=True, env=env, timeout=300)
    assert works.returncode == 0 and "template harmony" in works.stderr, works.stderr
