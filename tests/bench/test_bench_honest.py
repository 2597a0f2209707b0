"""The benches print only what they ran: `bench/ui_stream.py` streams and renders the whole
answer it reports (the window's own `max_tokens` no longer cuts it at 1,024), refuses to print
figures when anything cut it, and times its cold start through the real entry point."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def ui_stream() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ui_stream", ROOT / "bench" / "ui_stream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/ui_stream.py", "--rate", "5000", "--no-cold-start", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )


def test_the_whole_answer_is_streamed_and_rendered_before_figures() -> None:
    done = bench("--tokens", "1300")  # past the 1,024 the window's settings would allow
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("streamed 1300 tokens in ")
    assert "no figures" not in done.stderr


def test_an_answer_cut_by_the_window_gives_no_figures() -> None:
    done = bench("--tokens", "300", "--window-max-tokens", "100")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no figures: the engine generated 100 of the answer's 304 tokens" in done.stderr


def test_the_check_names_what_was_cut() -> None:
    check = ui_stream().unfinished
    assert check(304, 304, 1200, 1200, "done") is None
    assert "generated 100 of" in check(304, 100, 1200, 400, "incomplete")
    assert "ended stopped" in check(304, 304, 1200, 1200, "stopped")
    assert "handed 1,000 of the answer's 1,200 characters" in check(304, 304, 1200, 1000, "done")


def test_cold_start_counts_only_a_window_shown_through_the_entry_point() -> None:
    module = ui_stream()
    assert module.cold_start([sys.executable, "-c", "pass"], runs=1) == float("inf")
    took = module.cold_start([sys.executable, *module.OURS], runs=1)
    assert 0 < took < 60
