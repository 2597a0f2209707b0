"""The command-line contract, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from app.harmony import encoding as enc
from tests.fixed_conversations import fixed_conversations


def cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "app", *args], input=stdin, capture_output=True, text=True, timeout=120, env=env
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc.returncode, lines, proc.stderr


def test_render_modes_flags_and_per_line_overrides(renderer: Any) -> None:
    conv = fixed_conversations()["finished_turn"].to_dict()
    lines = [conv, {**conv, "mode": "training"}, {**conv, "keep_analysis": True, "mode": "plain"}]
    code, out, _ = cli("harmony", "render", "--mode", "plain", stdin="\n".join(map(json.dumps, lines)))
    assert code == 0 and len(out) == 3
    assert out[0]["tokens"][-1] == enc.END and "Simple arithmetic." not in out[0]["text"]
    assert out[1]["tokens"][-1] == enc.RETURN
    assert "Simple arithmetic." in out[2]["text"]
    assert out[0]["text"] == renderer.encoding.decode(out[0]["tokens"])
    code, out, _ = cli("harmony", "render", "--next-role", "user", stdin=json.dumps(conv))
    assert out[0]["text"].endswith("<|start|>user")


def test_bad_lines_give_error_lines_and_the_run_goes_on() -> None:
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    stdin = "\n".join([good, "{not json", json.dumps({"messages": [{"role": "tool", "content": "x"}]}),
                       json.dumps({"messages": [], "mode": "sideways"}), good])
    code, out, _ = cli("harmony", "render", stdin=stdin)
    assert code == 0
    assert [("error" in o) for o in out] == [False, True, True, True, False]
    assert out[1]["error"]["code"] == "E-INPUT-JSON"
    assert out[2]["error"]["code"] == "E-RENDER"
    assert out[3]["error"]["code"] == "E-INPUT-INVALID"


def test_parse_contract(encoding: enc.HarmonyEncoding) -> None:
    answer = encoding.encode_with_specials("<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>")
    whole = encoding.encode_with_specials("<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>yo<|end|>")
    broken = encoding.encode_with_specials("<|channel|>final The capital is Paris.<|return|>")
    lines = [{"tokens": answer}, {"tokens": whole, "role": None}, {"tokens": broken},
             {"tokens": broken, "strict": True}, {"tokens": [1, -5]}, "[1, 2]"]
    code, out, _ = cli("harmony", "parse", stdin="\n".join(map(json.dumps, lines)))
    assert code == 0 and len(out) == 6
    assert [m["channel"] for m in out[0]["messages"]] == ["analysis", "final"] and out[0]["errors"] == []
    assert out[0]["stop"] == "return"
    assert [m["role"] for m in out[1]["messages"]] == ["user", "assistant"]
    assert out[2]["messages"][0]["content"][0]["text"] == "The capital is Paris."
    assert out[2]["errors"][0]["code"] == "E-PARSE-HEADER"
    assert out[3]["messages"] == [] and out[3]["errors"][0]["code"] == "E-STREAM-TRUNCATED"
    assert out[4]["error"]["code"] == "E-INPUT-INVALID"
    assert out[5]["error"]["code"] == "E-INPUT-INVALID"


def test_parse_strict_flag_and_role_null(encoding: enc.HarmonyEncoding) -> None:
    tokens = encoding.encode_with_specials("<|start|>user<|message|>hi<|end|>")
    code, out, _ = cli("harmony", "parse", "--role", "null", "--strict", stdin=json.dumps({"tokens": tokens}))
    assert code == 0 and out[0]["messages"][0]["role"] == "user" and out[0]["errors"] == []


def test_default_command_starts_the_terminal_chat_on_the_default_model(smollm_model: Any) -> None:
    import os

    headless = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    code, out, err = cli(stdin="", env=headless)  # no display; stdin closed at once: load, then leave
    assert code == 0 and out == []
    assert "terminal chat" in err and "Loaded llama model" in err and "template smollm2" in err


def test_the_screenshot_command_renders_the_sample_conversation(tmp_path: Any) -> None:
    from PySide6.QtGui import QImage

    shot = tmp_path / "shot.png"
    code, _, err = cli("--screenshot", str(shot))
    assert code == 0 and f"wrote {shot}" in err
    image = QImage(str(shot))
    assert not image.isNull() and image.width() >= 1000 and image.height() >= 800


def test_the_default_model_answers_the_first_question_offline(smollm_model: Any) -> None:
    """The question a new user asks first, through the terminal chat on the default model."""
    run = subprocess.run([sys.executable, "-m", "app", "chat", "--model", "default", "--prompt",
                          "What is the capital of France?", "--threads", "1", "--seed", "1"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Paris" in run.stdout, (run.stdout, run.stderr[-1000:])
