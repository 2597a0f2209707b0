"""Killing the app while an answer streams: on restart everything earlier is there, and the
streaming answer up to its last checkpoint, marked incomplete (a real process, a real file)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from app.store.history import HistoryStore

ROOT = Path(__file__).resolve().parents[2]

APP = """
import asyncio, sys
from pathlib import Path
import qasync
from app.controllers.bridge import EngineBridge
from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost
from app.controllers.ui_state import UiState
from app.store.history import HistoryStore
from app.ui.app import application
from app.ui.window.main_window import MainWindow

app = application()
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)
host = ModelHost(EngineBridge())
long = "<|channel|>final<|message|>" + "word " * 5000 + "<|return|>"
host.use_scripted(["<|channel|>final<|message|>First answer.<|return|>", long], delay_s=0.004)
controller = ChatController(host, HistoryStore(Path(sys.argv[1])))
window = MainWindow(controller, UiState(Path(sys.argv[2])))
window.show()
flushes = [0]

def counted(*_args):
    flushes[0] += 1
    if flushes[0] == 60:  # about 2.4 s of streaming: several checkpoints are written
        print("streaming", flush=True)

async def main():
    controller.send("first")
    await controller.wait()
    controller.segmentText.connect(counted)
    controller.send("second")
    await controller.wait()
    print("finished", flush=True)

loop.run_until_complete(main())
"""


def test_killing_the_app_mid_answer_keeps_everything_up_to_the_last_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", APP, str(db), str(tmp_path / "ui.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    assert line.strip() == "streaming", proc.stderr.read()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    store = HistoryStore(db)
    listed = store.listed()
    assert len(listed) == 1
    doc = store.load(listed[0].id)
    assert doc is not None and [t.version.user_text for t in doc.turns] == ["first", "second"]
    first = doc.turns[0].version.reply
    assert first is not None and first.state == "done" and first.visible_text() == "First answer."
    cut = doc.turns[1].version.reply
    assert cut is not None and cut.state == "incomplete" and cut.error.startswith("E-STREAM-TRUNCATED")
    text = cut.segments[0].text
    assert text.startswith("word word") and 0 < text.count("word") < 5000
    store.close()
    # Every export keeps the interrupted answer, and importing it gives it back interrupted.
    from app.store.exchange import doc_messages, export, import_text

    assert [m.channel for m in doc_messages(doc)] == [None, "final", None, "final"]  # history list counts 4
    for fmt in ("ocm", "json"):
        exported = export(doc, fmt)
        assert text in exported
        back = import_text(exported, fmt).turns[1].version.reply
        assert back is not None and back.state == "incomplete" and back.visible_text() == text
    from app.domain.interrupted import INTERRUPTED_NOTICE

    assert f"*({INTERRUPTED_NOTICE})*" in export(doc, "md")  # in the window's words


def test_a_terminal_chat_killed_mid_answer_saved_what_it_printed(tmp_path: Path, gemma_model: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CONFIG": str(tmp_path / "config")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "chat", "--model", str(gemma_model), "--template", "completion",
         "--prompt", "Once upon a time", "--max-tokens", "4000", "--threads", "1", "--ctx", "4096",
         "--temperature", "0.8", "--save"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    printed = b""
    while len(printed) < 200:  # the answer is streaming to the terminal
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, proc.stderr.read().decode()
        printed += chunk
    import time

    time.sleep(1.0)  # past a checkpoint (every 0.5 s)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    store = HistoryStore(tmp_path / "data" / "history.db")
    (listed,) = store.listed()
    doc = store.load(listed.id)
    store.close()
    assert doc is not None and doc.turns[0].version.user_text == "Once upon a time"
    reply = doc.turns[0].version.reply
    assert reply is not None and reply.state == "incomplete" and reply.error.startswith("E-STREAM-TRUNCATED")
    saved = reply.visible_text()
    assert len(saved) >= 150 and printed.decode("utf-8", "ignore")[:100] in saved
