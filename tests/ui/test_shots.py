"""The pictures' commands draw what they say: `python -m tests.ui.shots OUT --size 640x480`
writes every picture of issue 56's note in both themes, each a real drawing of the window (not
blank, at the size asked); `harmony-desk --screenshot` draws a real conversation with the
bundled model, and says so when it draws the scripted sample instead. Each runs as the user
runs it, in its own process, offscreen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from PySide6.QtGui import QImage

from app.ui.screenshot import QUESTIONS

NAMES = ("chats-streaming", "chats-queued", "queue", "reading", "tool-calls", "base-model")
ROOT = Path(__file__).resolve().parents[2]


def _run(*words: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, *words], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)  # fmt: skip


def _colours(image: QImage) -> set[int]:
    """The colours on a grid of points across the image (a blank one has one)."""
    step_x, step_y = max(1, image.width() // 64), max(1, image.height() // 48)
    return {
        image.pixel(x, y)
        for x in range(0, image.width(), step_x)
        for y in range(0, image.height(), step_y)
    }


def test_the_note_pictures_are_drawn_at_the_size_asked_in_both_themes(
    smollm_model: Any, tmp_path: Path
) -> None:
    run = _run("-m", "tests.ui.shots", str(tmp_path), "--size", "640x480")
    assert run.returncode == 0, run.stderr[-3000:]
    expected = {f"{name}-{theme}-640x480.png" for name in NAMES for theme in ("light", "dark")}
    assert {p.name for p in tmp_path.iterdir()} == expected
    drawn = {}
    for name in sorted(expected):
        image = QImage(str(tmp_path / name))
        assert (image.width(), image.height()) == (640, 480), name
        assert len(_colours(image)) > 8, f"{name} is blank"
        drawn[name] = image
    for name in NAMES:  # the themes differ: each picture was drawn in its own
        assert drawn[f"{name}-light-640x480.png"] != drawn[f"{name}-dark-640x480.png"], name


def test_the_screenshot_command_draws_a_real_conversation_and_says_when_it_does_not(
    smollm_model: Any, tmp_path: Path
) -> None:
    real, scripted = tmp_path / "real.png", tmp_path / "scripted.png"
    run = _run("-m", "app", "--screenshot", str(real), "--theme", "dark", "--view", "narrow")
    assert run.returncode == 0, run.stderr[-3000:]
    asked = [line for line in run.stderr.splitlines() if line.startswith("asked ")]
    assert len(asked) == len(QUESTIONS) and all(
        "SmolLM2 135M Instruct" in line for line in asked
    ), run.stderr
    assert "scripted" not in run.stderr and "Paris" in asked[0]
    image = QImage(str(real))
    assert (image.width(), image.height()) == (640, 480) and len(_colours(image)) > 8
    run = _run("-m", "app", "--screenshot", str(scripted), "--scripted")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "drawing the scripted sample, not a real conversation" in run.stderr
    assert not QImage(str(scripted)).isNull()
