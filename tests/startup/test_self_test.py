"""`harmony-desk --self-test` in a fresh process, and what a failing check looks like."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.self_test import report, run_checks


def test_the_self_test_passes_here_offline(tmp_path: Path, smollm_model: Any) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
           "HARMONY_DESK_DATA": str(tmp_path / "data"), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-m", "app", "--self-test"], capture_output=True, text=True,
                          env=env, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    names = ["vocabulary", "harmony format", "default model", "window", "keyring", "folders"]
    for name in names:
        assert any(line[2:].startswith(name) and line[0] in "✓!" for line in lines), name
    assert lines[-1] == "all checks passed" and (tmp_path / "data").is_dir()
    assert list((tmp_path / "data").iterdir()) == []  # the probe file is gone


def test_a_failing_check_is_reported_the_others_still_run_and_the_status_is_1() -> None:
    def broken() -> str:
        raise OSError("disk on fire")

    outcomes = run_checks([("first", broken), ("second", lambda: "fine")])
    out = io.StringIO()
    assert report(outcomes, out) == 1
    text = out.getvalue()
    assert "✗ first" in text and "OSError: disk on fire (at test_self_test.py:" in text
    assert "✓ second" in text and text.splitlines()[-1] == "FAILED: first"
