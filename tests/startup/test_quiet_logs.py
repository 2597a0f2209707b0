"""Quiet logs: llama.cpp's load chatter only at DEBUG, nothing at WARNING or ERROR on a normal
load, a log file rotated and private; load progress as a bar on a terminal, two lines on a pipe."""

from __future__ import annotations

import io
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli.progress import Progress
from app.engine.worker.native_log import level_of

ROOT = Path(__file__).resolve().parents[2]


# --- llama.cpp's levels ---------------------------------------------------------------------------


def test_ggml_levels_are_read_as_ggml_h_defines_them() -> None:
    assert level_of(1, "create_tensor: loading tensor blk.0.attn_q.weight") == logging.DEBUG
    assert level_of(2, "print_info: n_vocab = 49152") == logging.INFO
    assert level_of(5, "...") == logging.INFO  # a continuation keeps the level of its line
    assert level_of(3, "llama_model_load: something odd") == logging.WARNING
    assert level_of(4, "llama_model_load: error loading model") == logging.ERROR
    assert level_of(5, " (continued)") == logging.ERROR


@pytest.mark.parametrize("line", [
    "llama_context: n_ctx_seq (512) > n_ctx_train (0) -- possible training context overflow",
    "llama_context: n_ctx_seq (2048) < n_ctx_train (8192) -- the full capacity of the model will not be utilized",
    "load: setting token '<|message|>' (200008) attribute to USER_DEFINED (16), old attributes: 8",
    "load: control-looking token:    212 '</s>' was not control-type; this is probably a bug in the model.",
])
def test_known_harmless_warnings_are_info(line: str) -> None:
    assert level_of(3, line) == logging.INFO


def test_a_real_context_overflow_stays_a_warning() -> None:
    line = "llama_context: n_ctx_seq (16384) > n_ctx_train (8192) -- possible training context overflow"
    assert level_of(3, line) == logging.WARNING


def test_the_client_logs_llama_cpp_info_at_debug_and_keeps_it_for_the_debug_pane() -> None:
    from app.engine.local.client import WorkerClient
    from app.engine.protocol import NativeLog

    seen: list[tuple[int, str]] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append((record.levelno, record.getMessage()))

    logger = logging.getLogger("llama")
    handler, before = Catch(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        client = WorkerClient()
        client._logged(NativeLog(((logging.INFO, "print_info: arch = llama"),
                                  (logging.WARNING, "llama_model_load: odd"))))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
    assert seen == [(logging.DEBUG, "print_info: arch = llama"), (logging.WARNING, "llama_model_load: odd")]
    assert client.take_log() == ["print_info: arch = llama", "llama_model_load: odd"]


# --- the log file -----------------------------------------------------------------------------------

LOAD = r"""
import logging, sys
from app.startup import configure_logging
from app.library.bundled import default_model_path
from app.engine.local.client import WorkerClient
if __name__ == "__main__":
    path = configure_logging()
    logging.getLogger("engine").info("launched")
    with WorkerClient() as client:
        client.load(default_model_path(), n_ctx=2048, n_threads=1)
        pane = len(client.take_log())
    print(path, pane, sep="|")
"""


def _launch(tmp_path: Path, level: str = "") -> tuple[list[str], int]:
    tmp_path.mkdir(exist_ok=True)
    script = tmp_path / "launch.py"
    script.write_text(LOAD)
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_LOG_LEVEL": level}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    path, pane = done.stdout.strip().split("|")
    return Path(path).read_text().splitlines(), int(pane)


def test_loading_a_model_writes_almost_nothing_to_the_log_and_nothing_alarming(tmp_path: Path) -> None:
    lines, pane = _launch(tmp_path)
    assert len(lines) <= 30, lines[:40]  # was ~2,200 lines (300 KB) for SmolLM2
    assert not [line for line in lines if " ERROR " in line or " WARNING " in line], lines
    assert any("launched" in line for line in lines)
    assert pane > 50  # the debug pane still has llama.cpp's own account of the load
    debug, _ = _launch(tmp_path / "debug", "DEBUG")
    assert any(" DEBUG llama: " in line for line in debug)  # asked for: the chatter is there
    assert not [line for line in debug if " ERROR " in line or " WARNING " in line]


ROTATE = r"""
import logging
from app.startup import BACKUPS, MAX_BYTES, configure_logging
path = configure_logging()
log = logging.getLogger("engine")
for i in range(MAX_BYTES * (BACKUPS + 2) // 4000):
    log.info("line %06d %s", i, "lorem ipsum " * 330)
print(path)
"""


def test_the_log_file_rotates_and_every_file_is_private(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", ROTATE], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    from app.startup import BACKUPS, MAX_BYTES

    path = Path(done.stdout.strip())
    files = sorted(path.parent.iterdir())
    assert [f.name for f in files] == [path.name] + [f"{path.name}.{i}" for i in range(1, BACKUPS + 1)]
    assert all(f.stat().st_size <= MAX_BYTES for f in files)
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_the_log_level_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.startup import log_level

    monkeypatch.delenv("HARMONY_DESK_LOG_LEVEL", raising=False)
    assert log_level() == logging.INFO
    monkeypatch.setenv("HARMONY_DESK_LOG_LEVEL", "debug")
    assert log_level() == logging.DEBUG
    monkeypatch.setenv("HARMONY_DESK_LOG_LEVEL", "chatty")
    assert log_level() == logging.INFO


# --- load progress ----------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_on_a_pipe_progress_is_one_line_at_the_start_and_one_at_the_end() -> None:
    pipe, clock = io.StringIO(), Clock()
    progress = Progress("Loading model.gguf", pipe, clock=clock)
    progress.start()
    for i in range(101):
        clock.now = i / 50
        progress(i / 100)
    progress.end(f"Loaded llama model model.gguf in {progress.elapsed:.1f} s.")
    assert pipe.getvalue() == "Loading model.gguf…\nLoaded llama model model.gguf in 2.0 s.\n"
    quiet = io.StringIO()
    step = Progress("Preparing", quiet, quiet=True)
    step(0.5)
    step.end("Prepared.")
    assert quiet.getvalue() == ""


def test_on_a_terminal_progress_is_a_bar_redrawn_at_most_ten_times_a_second() -> None:
    tty, clock = FakeTerminal(), Clock()
    progress = Progress("Loading model.gguf", tty, clock=clock)
    progress.start()
    for i in range(1001):  # 1,000 reports over 2 s
        clock.now = i / 500
        progress(i / 1000)
    progress.end("Loaded llama model model.gguf in 2.0 s.")
    out = tty.getvalue()
    draws = out.count("\r") - 1  # the last \r puts the final line in the bar's place
    assert 2 <= draws <= 2 * 10 + 2, draws
    assert out.count("\n") == 1 and out.endswith("Loaded llama model model.gguf in 2.0 s.".ljust(len(out.split("\r")[-2])) + "\n")
    assert "100%" in out and "[" in out


def test_a_failed_load_clears_its_bar_and_says_nothing_more() -> None:
    tty = FakeTerminal()
    progress = Progress("Loading \x1b]52;c;evil\x07x.gguf", tty)  # a hostile file name: printable only
    progress(0.3)
    progress.abandon()
    out = tty.getvalue()
    assert "\x1b" not in out and "\x07" not in out and out.endswith("\r") and "\n" not in out


def test_a_piped_chat_prints_two_load_lines(tmp_path: Path, smollm_model: Any) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "app", "chat", "--model", str(smollm_model), "--prompt", "Hi",
                           "--max-tokens", "2", "--threads", "1", "--ctx", "512"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    name = Path(smollm_model).name
    assert lines[0] == f"Loading {name}…" and lines[1].startswith(f"Loaded llama model {name} in ")
    assert "\r" not in done.stderr and "%" not in done.stderr
    broken = tmp_path / "x.zip"
    broken.write_bytes(b"PK\x03\x04" + bytes(100))
    failed = subprocess.run([sys.executable, "-m", "app", "chat", "--model", str(broken), "--prompt", "Hi"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    said = failed.stderr.splitlines()
    assert failed.returncode == 2 and said[0] == "Loading x.zip…"
    assert said[1] == ("harmony-desk: E-RESOURCE Cannot load the model “x.zip”: it is not a GGUF model file"
                       " (it looks like a ZIP archive; if the model is inside, unpack it first).")
    assert "50 4B 03 04" in failed.stderr and str(broken) in failed.stderr  # the details, indented below
