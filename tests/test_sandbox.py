"""The python tool's sandbox: state between calls, and every escape attempt a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.tools.sandbox import PythonSandbox, SandboxLimits


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PythonSandbox]:
    granted = tmp_path_factory.mktemp("granted")
    (granted / "data.txt").write_text("shared with the tool")
    with PythonSandbox(SandboxLimits(cpu_seconds=2, wall_seconds=3, memory_bytes=300 * 1024 * 1024),
                       granted=[str(granted)]) as box:
        box.granted_folder = granted  # type: ignore[attr-defined]
        yield box


def test_state_lives_between_calls(sandbox: PythonSandbox) -> None:
    assert sandbox.run("x = 21").ok
    result = sandbox.run("x * 2")
    assert result.ok and result.output == "42\n"
    assert sandbox.run("import math; print(round(math.pi, 3))").output == "3.142\n"


@pytest.mark.parametrize(
    "code, words",
    [("import socket; socket.socket()", "does not allow socket"),
     ("import urllib.request; urllib.request.urlopen('http://127.0.0.1:9')", "does not allow socket"),
     ("import os; os.system('true')", "does not allow os.system"),
     ("import subprocess; subprocess.run(['true'])", "does not allow subprocess"),
     ("open('/etc/hostname').read()", "outside its working folder"),
     ("open('/tmp/escape.txt', 'w')", "outside its working folder"),
     ("b = bytearray(1024 * 1024 * 1024)", "MemoryError")],
)
def test_escapes_are_clear_tool_errors(sandbox: PythonSandbox, code: str, words: str) -> None:
    result = sandbox.run(code)
    assert not result.ok and result.error is not None and words in result.error


def test_files_inside_the_working_folder_and_granted_ones(sandbox: PythonSandbox) -> None:
    assert sandbox.run("open('notes.txt', 'w').write('hello')").ok
    assert sandbox.run("print(open('notes.txt').read())").output == "hello\n"
    assert (sandbox.workdir / "notes.txt").read_text() == "hello"
    granted: Path = sandbox.granted_folder  # type: ignore[attr-defined]
    assert sandbox.run(f"print(open({str(granted / 'data.txt')!r}).read())").output == "shared with the tool\n"


def test_time_limit_kills_and_restarts(tmp_path: Path) -> None:
    with PythonSandbox(SandboxLimits(cpu_seconds=1, wall_seconds=2)) as box:
        box.run("y = 1")
        stuck = box.run("while True: pass")
        assert not stuck.ok and stuck.code == "E-TOOL-TIMEOUT" and "variables are gone" in (stuck.error or "")
        after = box.run("y")
        assert not after.ok and "NameError" in (after.error or "")
        assert box.run("1 + 1").output == "2\n"


def test_output_is_capped() -> None:
    with PythonSandbox(SandboxLimits(output_chars=100)) as box:
        result = box.run("print('x' * 1000)")
        assert result.ok and "output cut at 100 characters" in result.output and len(result.output) < 200
