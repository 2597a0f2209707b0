"""The python tool's compiled runtime: compiled once, kept per key, checked, never twice at once.

The cache's rules are the same whatever it compiles; these tests drive them with a small real
WebAssembly module (`runtime_fixture.py`: real wasmtime, real files, real processes), so a test
costs a second, not a minute. The last test runs the python tool's own runtime through the
`tools prepare` command in another process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.tools.sandbox_runtime import (
    RECORD,
    WAIT_NOTE,
    CompiledCache,
    CompileSpec,
    RuntimeCompileError,
)
from tests.tools.runtime_fixture import compile_greedy, compiles, small_spec

ROOT = Path(__file__).resolve().parents[2]


def _prepare_elsewhere(folder: Path, key: str, pause_s: float = 0.0) -> subprocess.Popen[str]:
    env = dict(os.environ, COMPILE_PAUSE_S=str(pause_s))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.tools.runtime_fixture", str(folder), key],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def _said(process: subprocess.Popen[str]) -> str:
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0, out
    return out.strip()


def test_compiled_once_then_found(tmp_path: Path) -> None:
    cache = CompiledCache(small_spec(tmp_path))
    heard: list[str] = []
    assert not cache.ready()
    assert cache.prepare(heard.append) is True
    assert heard == [WAIT_NOTE]  # told before the wait
    assert cache.ready() and cache.last is not None and cache.last.ok
    assert cache.last.peak_bytes > 0
    heard.clear()
    assert cache.prepare(heard.append) is False
    assert heard == []  # nothing to wait for: nothing said
    assert len(compiles(tmp_path)) == 1
    assert (tmp_path.stat().st_mode & 0o777) == 0o700


def test_the_cache_is_used_across_processes(tmp_path: Path) -> None:
    assert _said(_prepare_elsewhere(tmp_path, "1")) == "compiled"
    mine = CompiledCache(small_spec(tmp_path))
    assert mine.ready()  # what another process compiled is ready here
    assert mine.prepare() is False
    assert _said(_prepare_elsewhere(tmp_path, "1")) == "found"
    assert len(compiles(tmp_path)) == 1


def test_another_version_is_not_used_and_is_replaced(tmp_path: Path) -> None:
    CompiledCache(small_spec(tmp_path, "1")).prepare()
    (old,) = tmp_path.glob("*.cwasm")
    newer = CompiledCache(small_spec(tmp_path, "2"))
    assert not newer.ready()
    assert newer.prepare() is True
    assert not old.exists()  # removed, never loaded
    (new,) = tmp_path.glob("*.cwasm")
    assert new != old and newer.ready()
    assert not CompiledCache(small_spec(tmp_path, "1")).ready()  # each key its own
    assert len(compiles(tmp_path)) == 2


def test_a_damaged_file_is_found_and_rebuilt(tmp_path: Path) -> None:
    cache = CompiledCache(small_spec(tmp_path))
    cache.prepare()
    (compiled,) = tmp_path.glob("*.cwasm")
    st = compiled.stat()
    data = bytearray(compiled.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size and times: only a hash sees it
    compiled.write_bytes(bytes(data))
    os.utime(compiled, ns=(st.st_atime_ns, st.st_mtime_ns))
    heard: list[str] = []
    assert cache.prepare(heard.append) is True
    assert heard == [WAIT_NOTE]
    assert len(compiles(tmp_path)) == 2
    (rebuilt,) = tmp_path.glob("*.cwasm")
    assert rebuilt.read_bytes() != bytes(data)


def test_a_truncated_file_is_not_ready(tmp_path: Path) -> None:
    cache = CompiledCache(small_spec(tmp_path))
    cache.prepare()
    (compiled,) = tmp_path.glob("*.cwasm")
    compiled.write_bytes(compiled.read_bytes()[:100])
    assert not cache.ready()
    assert cache.prepare() is True and cache.ready()


def test_a_damaged_record_is_rebuilt(tmp_path: Path) -> None:
    cache = CompiledCache(small_spec(tmp_path))
    cache.prepare()
    (tmp_path / RECORD).write_text('{"key": ')
    assert not cache.ready()
    assert cache.prepare() is True and cache.ready()


def test_two_processes_at_once_compile_once(tmp_path: Path) -> None:
    first = _prepare_elsewhere(tmp_path, "1", pause_s=1.5)
    second = _prepare_elsewhere(tmp_path, "1", pause_s=1.5)
    said = sorted([_said(first), _said(second)])
    assert said == ["compiled", "found"]
    assert len(compiles(tmp_path)) == 1
    assert CompiledCache(small_spec(tmp_path)).ready()


@pytest.mark.skipif(sys.platform == "win32", reason="memory caps are POSIX rlimits")
def test_the_compile_memory_is_capped(tmp_path: Path) -> None:
    spec = CompileSpec(tmp_path, {"module": "greedy"}, compile_greedy, 256 * 1024 * 1024)
    with pytest.raises(RuntimeCompileError, match="MemoryError"):
        CompiledCache(spec).prepare()
    assert not CompiledCache(spec).ready()


@pytest.mark.slow
def test_tools_prepare_readies_the_python_tool(tmp_path: Path) -> None:
    from app.tools.sandbox import PythonSandbox, runtime_folder, unavailable_reason
    from app.tools.sandbox_runtime import runtime_spec

    if unavailable_reason() is not None:
        pytest.skip(unavailable_reason() or "")
    done = subprocess.run(
        [sys.executable, "-m", "app", "tools", "prepare"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert str(runtime_folder()) in done.stdout
    assert CompiledCache(runtime_spec()).ready()  # what that process made, this one finds
    with PythonSandbox(workspace=tmp_path) as box:
        assert box.run("print(6 * 7)").output == "42\n"


@pytest.mark.slow
def test_the_terminal_says_when_a_call_waits_for_the_runtime(tmp_path: Path) -> None:
    from app.tools.sandbox import runtime_folder, unavailable_reason

    if unavailable_reason() is not None:
        pytest.skip(unavailable_reason() or "")
    fresh = tmp_path / "cache" / "python-sandbox"
    fresh.mkdir(parents=True, mode=0o700)
    for compiled in runtime_folder().glob("*.cwasm"):  # a module with no record: checked first
        shutil.copyfile(compiled, fresh / compiled.name)
        (fresh / compiled.name).chmod(0o600)
    env = dict(os.environ, HARMONY_DESK_CACHE=str(tmp_path / "cache"))
    call = [sys.executable, "-m", "app", "tools", "call", "python", '{"code": "6 * 7"}']
    first = subprocess.run(call, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr
    assert f"[{WAIT_NOTE}…]" in first.stderr and "42" in first.stdout
    again = subprocess.run(call, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    assert WAIT_NOTE not in again.stderr and "42" in again.stdout
