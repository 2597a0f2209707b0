"""The python tool's memory is bounded and said: each call's host process runs under a cap the
app sets from the guest's own limit, and the tool's description tells the model that limit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.tools.builtin.python import python_tool
from app.tools.sandbox import PythonSandbox, SandboxLimits, unavailable_reason
from app.tools.sandbox_host import HOST_MARGIN_BYTES

MIB = 2**20


def _data_cap(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max data size"):
            return int(line.split()[3])
    raise AssertionError("no data size line")


def test_the_description_states_the_limits() -> None:
    limits = SandboxLimits(wall_seconds=12, memory_bytes=300 * MIB)
    description = python_tool(PythonSandbox(limits)).description
    assert "at most 12 s and 300 MiB of memory" in description
    assert "no network" in description


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.skipif(unavailable_reason() is not None, reason="the runtime is not installed")
def test_each_call_runs_under_a_memory_cap(tmp_path: Path) -> None:
    limits = SandboxLimits(memory_bytes=256 * MIB)
    with PythonSandbox(limits, workspace=tmp_path) as box:
        assert box.run("pass").ok
        assert box.pid is not None
        cap = _data_cap(box.pid)
        floor = limits.memory_bytes + HOST_MARGIN_BYTES
        assert floor < cap < floor + 512 * MIB  # the host's start-up use on top, no more
        assert box.run("b = bytearray(200 * 2**20); print(len(b) // 2**20)").output == "200\n"
        too_much = box.run("c = bytearray(300 * 2**20)")
        assert not too_much.ok and "MemoryError" in (too_much.error or "")
        assert box.run("print(len(b) // 2**20)").output == "200\n"  # the host lives on
