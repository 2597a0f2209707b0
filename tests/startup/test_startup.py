"""Start-up: category loggers write a rotating, redacted log file in the data folder, and an
exception nobody caught is logged with its traceback and told to the user once, from any thread,
without ending the app's other work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import logging, threading, sys
from app.startup import configure_logging, install_crash_handler, log_path
told = []
configure_logging()
configure_logging()  # twice: still one handler
install_crash_handler(told.append)
logging.getLogger("engine").info("loaded with key sk-abcdefghijklmnopqrstuvwxyz")
t = threading.Thread(target=lambda: 1 / 0)
t.start(); t.join()
sys.excepthook(ValueError, ValueError("boom"), None)
print(len(told), told[0][:60], log_path(), sep="|")
"""


def test_uncaught_errors_are_logged_and_told_and_secrets_never_logged(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    count, first, path = done.stdout.strip().split("|")
    assert count == "2" and first.startswith("Harmony Desk hit an unexpected error (ZeroDivisionError")
    log = Path(path).read_text()
    assert "ZeroDivisionError" in log and "ValueError: boom" in log and "Traceback" in log
    assert log.count("loaded with key") == 1 and "sk-abcdefghijklmnop" not in log
    assert "engine" in log and "crash" in log
