"""A model load's progress in the terminal chat (the newcomer review's M4): `harmony-desk chat`
loads its model through `app/cli/progress.py`, run here as a real subprocess on the real SmolLM2
model — on a terminal (a pseudo-terminal for stderr) a bar redrawn in place, its share rising
from 0 % to 100 % before the "Loaded …" line takes its place; on a pipe exactly one line before
("Loading FILE…") and one after, no percentage."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BAR = re.compile(r"\rLoading (\S+) \[([#-]{24})\] +(\d+)%")


def _chat(model: Path, home: Path, stderr: Any) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "HARMONY_DESK_DATA": str(home / "data"),
        "HARMONY_DESK_CONFIG": str(home / "config"),
    }
    args = [
        "chat",
        "--model",
        str(model),
        "--prompt",
        "Hi",
        "--max-tokens",
        "2",
        "--threads",
        "1",
        "--seed",
        "1",
    ]
    return subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)  # fmt: skip


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed its end of the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_the_terminal_chat_draws_its_load_as_a_bar_that_rises_to_100(
    smollm_model: Any, tmp_path: Path
) -> None:
    master, slave = pty.openpty()
    try:
        with _chat(Path(smollm_model), tmp_path, slave) as proc:
            os.close(slave)
            err = _read_all(master)
            assert proc.wait(timeout=300) == 0, err[-2000:]
    finally:
        os.close(master)
    bars = BAR.findall(err)
    assert bars and {name for name, _, _ in bars} == {Path(smollm_model).name}, err[-2000:]
    shares = [int(share) for _, _, share in bars]
    assert shares == sorted(shares) and shares[0] == 0 and shares[-1] == 100
    assert all(abs(cells.count("#") - int(share) * 24 / 100) <= 1 for _, cells, share in bars)
    loaded = re.search(r"\rLoaded llama model (\S+) in [\d.]+ s", err)
    assert loaded and loaded.start() > err.rindex("100%")  # drawn over the bar's place


def test_on_a_pipe_the_load_is_one_line_before_and_one_after(
    smollm_model: Any, tmp_path: Path
) -> None:
    proc = _chat(Path(smollm_model), tmp_path, subprocess.PIPE)
    _, raw = proc.communicate(timeout=300)
    err = raw.decode()
    assert proc.returncode == 0, err[-2000:]
    lines = err.splitlines()
    loading = [line for line in lines if line.startswith("Loading")]
    assert loading == [f"Loading {Path(smollm_model).name}…"]
    after = [line for line in lines if line.startswith("Loaded llama model")]
    assert len(after) == 1 and lines.index(loading[0]) < lines.index(after[0])
    assert "%" not in err and "\r" not in err
