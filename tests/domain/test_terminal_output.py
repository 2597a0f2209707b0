"""Terminal output: model, server and imported text cannot drive the terminal (OSC 52 writes
the clipboard); the same command into a pipe or a file still gets the exact bytes."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from app.domain.terminal import TerminalText, printable

ROOT = Path(__file__).resolve().parents[2]
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
HOSTILE = f"Title{OSC52} \x1b[2J\x1b[31mred\x1b[0m \x9b6n\rover\x08 done"


def test_printable_keeps_the_text_and_drops_every_control() -> None:
    assert printable(HOSTILE) == "Title]52;c;cm0gLXJmIH4= [2J[31mred[0m 6nover done"
    assert printable("tabs\tand\nlines é ✓") == "tabs\tand\nlines é ✓"
    out = io.StringIO()
    stream = TerminalText(out)
    for piece in ["\x1b", "]52;c;", "x\x07", "ok\n"]:  # a sequence split across writes
        stream.write(piece)
    assert out.getvalue() == "]52;c;xok\n"


def _in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    leader, follower = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "app", *args], stdout=follower, stderr=follower,
                          env=env, cwd=ROOT, timeout=120)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert done.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_imported_text_reaches_a_terminal_clean_and_a_pipe_exact(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CONFIG": str(tmp_path / "config")}
    chat = {"title": HOSTILE, "chat": {"messages": [{"role": "user", "content": f"hi {OSC52}"},
                                                     {"role": "assistant", "content": f"answer {OSC52}"}]}}
    source = tmp_path / "webui.json"
    source.write_text(json.dumps(chat))
    subprocess.run([sys.executable, "-m", "app", "history", "import", str(source)], env=env, cwd=ROOT,
                   check=True, capture_output=True, timeout=120)
    shown = _in_a_terminal(["history", "list"], env)
    assert "Title" in shown and "\x1b" not in shown and "\x9b" not in shown and "\x07" not in shown
    piped = subprocess.run([sys.executable, "-m", "app", "history", "list"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert OSC52 in piped.stdout  # a pipe gets the title as stored
    conversation = piped.stdout.split()[0]
    exported = _in_a_terminal(["history", "export", conversation, "--format", "md", "-"], env)
    assert "answer" in exported and "\x1b" not in exported
