"""Streaming into the real window: main-thread stalls, render cost, and cold start.

    python bench/ui_stream.py [--tokens 20000] [--rate 1000]

A 20,000-token Markdown answer (paragraphs, lists, code blocks) streams from the scripted
source at `--rate` tokens/s into the real window (offscreen platform). Printed:
- the longest main-thread stall (a 5 ms heartbeat timer on the GUI thread; a stall is how late
  a beat came), against the 50 ms goal;
- the render cost per 1,000 tokens (time inside the transcript's append) for the first and the
  last 1,000 tokens, and their ratio (goal: the end within 1.5x of the start), next to the
  reference measured in the same run: re-rendering the whole Markdown on every flush;
- cold start to a visible window without a model (a fresh process), next to a bare PySide6
  window in a fresh process (the floor), against the 1.5 s goal.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HARMONY_DESK_CONFIG", tempfile.mkdtemp(prefix="harmony-desk-bench-"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PARAGRAPH = (
    "Streaming text into a desktop window should feel instant: each flush adds a few words,"
    " and only the **growing tail** is laid out again, so the cost per token stays flat.\n\n"
)
LIST = "* first point with `inline code`\n* second point\n* third point, a little longer\n\n"
CODE = "```python\ndef add(a: int, b: int) -> int:\n    return a + b  # simple\n```\n\n"


def markdown_tokens(n: int) -> list[int]:
    from app.harmony import encoding as enc

    e = enc.load_encoding()
    header = e.encode_with_specials("<|channel|>final<|message|>")
    body: list[int] = []
    i = 0
    while len(body) < n:
        body += e.encode_ordinary((PARAGRAPH, LIST, CODE)[i % 3])
        i += 1
    return header + body[:n] + [enc.RETURN]


BARE = """
import sys, time
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication(sys.argv[:1]); w = QMainWindow(); w.resize(1100, 760); w.show()
app.processEvents(); print("shown", flush=True)
"""
OURS = """
import sys, time
from app.ui.app import application, build_window
app = application(); w = build_window(); w.show()
app.processEvents(); print("shown", flush=True)
"""


def cold_start(code: str, runs: int = 3) -> float:
    """Best wall time (s) from spawning Python to the window shown, over `runs` fresh processes."""
    best = float("inf")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if line.strip() == "shown":
            best = min(best, elapsed)
    return best


def stream(n_tokens: int, rate: float, debug_pane: bool = False) -> dict[str, Any]:
    import qasync
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QTextBrowser

    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.engine.local.scripted import ScriptedClient
    from app.harmony import encoding as enc
    from app.ui.app import application
    from app.ui.main_window import MainWindow
    from app.ui.markdown_view import MarkdownView

    app = application()
    loop = qasync.QEventLoop(app, already_running=True)
    asyncio.set_event_loop(loop)
    tokens = markdown_tokens(n_tokens)
    client = ScriptedClient([tokens], delay_s=1.0 / rate)
    host = ModelHost(EngineBridge())
    host.use(client, "harmony")
    controller = ChatController(host)
    controller.max_tokens = len(tokens) + 10
    window = MainWindow(controller)
    window.resize(1100, 760)
    window.set_debug(debug_pane, remember=False)
    window.show()
    e = enc.load_encoding()
    body = tokens[3:-1]
    start_chars = len(e.decode(body[:1000]))
    end_from = len(e.decode(body[: n_tokens - 1000]))
    costs = {"start": 0.0, "end": 0.0}
    streamed = [0]
    original = MarkdownView.append_text

    def timed(self: MarkdownView, text: str) -> None:
        t0 = time.perf_counter()
        original(self, text)
        spent = time.perf_counter() - t0
        before = streamed[0]
        streamed[0] += len(text)
        if before < start_chars:
            costs["start"] += spent * min(1.0, (start_chars - before) / max(1, len(text)))
        if streamed[0] > end_from:
            costs["end"] += spent * min(1.0, (streamed[0] - end_from) / max(1, len(text)))

    MarkdownView.append_text = timed  # type: ignore[method-assign]
    beats: list[float] = []
    heart = QTimer()
    heart.setInterval(5)
    heart.timeout.connect(lambda: beats.append(time.perf_counter()))
    heart.start()
    t0 = time.perf_counter()
    controller.send("Write a long answer.")
    while controller.busy:
        app.processEvents()
        time.sleep(0.0005)
    elapsed = time.perf_counter() - t0
    heart.stop()
    MarkdownView.append_text = original  # type: ignore[method-assign]
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    stall = max(gaps) - 0.005 if gaps else 0.0
    at = (beats[gaps.index(max(gaps))] - t0) if gaps else 0.0
    worst = sorted(gaps, reverse=True)[:5]
    # the reference: the whole Markdown set again on every flush, at the start and at the end
    text = e.decode(body)
    flush_chars = max(1, int(len(text) / (elapsed / 0.04)))
    ref = QTextBrowser()

    def full_render_cost(upto: int) -> float:
        count, t = 0, time.perf_counter()
        for pos in range(max(flush_chars, upto - start_chars), upto + 1, flush_chars):
            ref.setMarkdown(text[:pos])
            count += 1
        return (time.perf_counter() - t) / max(count, 1) * (start_chars / flush_chars)

    ref_start = full_render_cost(start_chars)
    ref_end = full_render_cost(len(text))
    window.close()
    controller.close()
    host.bridge.close()
    app.processEvents()
    return {
        "stall_ms": stall * 1000,
        "stall_at_s": at,
        "worst_ms": [round((g - 0.005) * 1000, 1) for g in worst],
        "start_ms": costs["start"] * 1000,
        "end_ms": costs["end"] * 1000,
        "ref_start_ms": ref_start * 1000,
        "ref_end_ms": ref_end * 1000,
        "tokens_per_s": n_tokens / elapsed,
        "seconds": elapsed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=1000.0, help="scripted tokens per second")
    parser.add_argument("--no-cold-start", action="store_true")
    parser.add_argument("--debug-pane", action="store_true", help="stream with the debug pane on")
    args = parser.parse_args()
    s = stream(args.tokens, args.rate, args.debug_pane)
    pane = "on" if args.debug_pane else "off"
    print(
        f"streamed {args.tokens} tokens in {s['seconds']:.1f} s ({s['tokens_per_s']:.0f} tok/s,"
        f" scripted source paced at {args.rate:.0f} tok/s; debug pane {pane};"
        " Qt offscreen; 2-core machine)"
    )
    print(
        f"longest main-thread stall: {s['stall_ms']:.1f} ms at {s['stall_at_s']:.2f} s into the"
        f" answer (goal < 50 ms); the five longest: {s['worst_ms']}"
    )
    print("render cost per 1,000 tokens  ours (tail only)   reference (full re-render per flush)")
    print(f"  first 1,000 tokens        {s['start_ms']:10.1f} ms     {s['ref_start_ms']:10.1f} ms")
    print(f"  last 1,000 tokens         {s['end_ms']:10.1f} ms     {s['ref_end_ms']:10.1f} ms")
    ours = s["end_ms"] / max(s["start_ms"], 1e-9)
    ref = s["ref_end_ms"] / max(s["ref_start_ms"], 1e-9)
    print(f"  end / start               {ours:10.2f}x        {ref:10.2f}x   (goal: ours <= 1.5x)")
    if not args.no_cold_start:
        bare = cold_start(BARE)
        window = cold_start(OURS)
        print(
            f"cold start to a visible window (best of 3 fresh processes): ours {window:.2f} s,"
            f" bare PySide6 window {bare:.2f} s, ratio {window / bare:.2f}x (goal < 1.5 s)"
        )
    sys.stdout.flush()
    os._exit(0)  # skip Qt's teardown at interpreter exit: nothing is left to save


if __name__ == "__main__":
    sys.exit(main())
