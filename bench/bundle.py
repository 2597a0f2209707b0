"""The Linux bundle next to the virtual environment: size on disk and cold start to a window.

    python bench/bundle.py [--bundle dist/harmony-desk] [--runs 3]

Builds the bundle first if it is not there (`packaging/build_linux.sh`, about 1.5 minutes).
Printed side by side, with ratios:
- size: the bundle folder, against what the app needs installed in a virtual environment (its
  runtime dependencies' files, resolved from the package metadata, not the test tools) plus the
  Python installation a venv borrows (the standard library and libpython);
- cold start: from spawning the process to the window shown (offscreen; the app prints "window
  shown after" before the model loads), best of `--runs` fresh processes, on empty user folders:
  the bundle's executable against `.venv/bin/harmony-desk`.
Checked before printing (no figures otherwise, exit status 1): the bundle's executable is there
and at least one run of each showed its window.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def runtime_closure(dist: str = "harmony-desk") -> set[str]:
    """The distributions `dist` needs at run time (no extras)."""
    seen: set[str] = set()
    todo = [dist]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for req in requires:
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0])
    return seen


def venv_size() -> tuple[int, int]:
    """(bytes of the runtime dependencies' files, bytes of the Python they run on)."""
    total = 0
    for key in runtime_closure():
        try:
            dist = md.distribution(key)
        except md.PackageNotFoundError:
            continue
        for f in dist.files or []:
            path = Path(str(dist.locate_file(f)))
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    python = (
        folder_size(stdlib) - folder_size(stdlib / "site-packages")
        if (stdlib / "site-packages").exists()
        else folder_size(stdlib)
    )
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "/")
    python += sum(
        p.stat().st_size
        for p in libdir.glob("libpython3*.so*")
        if p.is_file() and not p.is_symlink()
    )
    return total, python


def cold_start(command: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        home = tempfile.mkdtemp(prefix="harmony-desk-bench-")
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "HARMONY_DESK_CONFIG": f"{home}/config",
            "HARMONY_DESK_DATA": f"{home}/data",
            "HARMONY_DESK_CACHE": str(Path.home() / ".cache" / "harmony-desk"),  # model built
        }
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
        )
        assert proc.stderr is not None
        shown = False
        for line in proc.stderr:
            if "window shown after" in line:
                shown = True
                break
        elapsed = time.perf_counter() - start
        proc.kill()
        proc.wait()
        proc.stderr.close()
        if shown:
            best = min(best, elapsed)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "harmony-desk")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not (args.bundle / "harmony-desk").exists():
        env = {**os.environ, "OUT": str(args.bundle.parent), "PYTHON": sys.executable}
        subprocess.run(["bash", str(ROOT / "packaging" / "build_linux.sh")], check=True, env=env)
    bundle_bytes = folder_size(args.bundle)
    deps, python = venv_size()
    venv_exe = Path(sys.executable).parent / "harmony-desk"
    ours = cold_start([str(args.bundle / "harmony-desk")], args.runs)
    ref = cold_start([str(venv_exe)], args.runs)
    for name, took in (("the bundle", ours), ("the virtual environment", ref)):
        if took == float("inf"):
            raise SystemExit(f"no figures: {name} never showed its window in {args.runs} runs")
    mib = 2**20
    print(f"bundle bench ({os.cpu_count()} cores; best of {args.runs} cold starts, offscreen)")
    print("                                 bundle        virtual environment    ratio")
    venv = deps + python
    print(
        f"size on disk                 {bundle_bytes / mib:7.0f} MiB   {venv / mib:7.0f} MiB"
        f" ({deps / mib:.0f} deps + {python / mib:.0f} Python)   {bundle_bytes / venv:5.2f}x"
    )
    print(
        f"cold start to the window     {ours:7.2f} s     {ref:7.2f} s"
        + " " * 20
        + f"{ours / ref:5.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
