"""`harmony-desk transcript convert` and `transcript check`, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocm"


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", "transcript", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_convert_round_trips_through_every_format(tmp_path: Path) -> None:
    source = FIXTURES / "03_concurrent_calls.ocm"
    as_json = tmp_path / "t.json"
    assert cli("convert", "--to", "json", str(source), str(as_json)).returncode == 0
    data = json.loads(as_json.read_text())
    assert data["messages"][2]["tool_call"] == {
        "id": "wx1", "recipient": "functions.get_weather", "content_type": "json",
        "arguments": '{"city":"Tokyo","deadline_ms":2000}',
    }
    assert data["messages"][1] == {"role": "assistant", "channel": "analysis", "thinking": "Two lookups."}
    back = cli("convert", "--to", "ocm", str(as_json), "-")
    assert back.returncode == 0
    original = cli("convert", "--to", "ocm", "--from", "ocm", str(source), "-").stdout
    assert back.stdout == original
    harmony = cli("convert", "--to", "harmony-json", "-", "-", stdin=original)
    assert json.loads(harmony.stdout)["messages"][4]["name"] == "functions.get_weather"
    tokens = cli("convert", "--to", "harmony-tokens", "-", "-", stdin=original)
    rendered = json.loads(tokens.stdout)
    assert "call_id" not in rendered["text"] and rendered["tokens"][0] == 200006
    again = cli("convert", "--to", "harmony-json", "--from", "harmony-tokens", "-", "-", stdin=tokens.stdout)
    assert json.loads(again.stdout) == json.loads(harmony.stdout)


def test_check_prints_code_line_col_message_and_fails() -> None:
    result = cli("check", str(FIXTURES / "06_constrain_violation.ocm"))
    assert result.returncode == 1
    code, where, *_ = result.stdout.split(" ", 2)
    assert (code, where) == ("E-BODY-CONSTRAINT-VIOLATION", "4:1")
    clean = cli("check", str(FIXTURES / "03_concurrent_calls.ocm"))
    assert clean.returncode == 0 and clean.stdout == ""


def test_unreadable_input_is_a_clear_error(tmp_path: Path) -> None:
    missing = cli("convert", "--to", "json", str(tmp_path / "nope.ocm"), "-")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    broken = cli("convert", "--to", "json", "-", "-", stdin="---\nversion: 2.2\n---\n<|start|>robot<|message|>x<|end|>")
    assert broken.returncode == 2 and "E-PARSE-HEADER 4:10: unknown role 'robot'" in broken.stderr
    out = tmp_path / "kept.json"
    out.write_text("previous")
    assert cli("convert", "--to", "json", "-", str(out), stdin="{bad json").returncode == 2
    assert out.read_text() == "previous"  # a failed conversion never clobbers the output
