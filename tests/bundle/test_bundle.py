"""The Linux bundle, built from this checkout with PyInstaller, passes its own self-test offscreen
on empty user folders (about 1.5 minutes to build here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.session_dirs import locked

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_linux_bundle_builds_and_passes_its_self_test(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    # PyInstaller's work folder is this checkout's build/pyinstaller: two test sessions building
    # at once (two people, or two runs) wait for each other instead of sharing it.
    with locked(ROOT / "build" / "pyinstaller.lock"):
        done = subprocess.run(
            ["bash", str(ROOT / "packaging" / "build_linux.sh")],
            env={**os.environ, "OUT": str(out), "PYTHON": sys.executable},
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "all checks passed" in done.stdout
    for check in ("vocabulary", "harmony format", "default model", "window", "model library", "folders"):
        assert any(line[2:].startswith(check) and line.startswith("✓") for line in done.stdout.splitlines())
    bundle = out / "harmony-desk"
    internal = bundle / "_internal"
    assert (internal / "resources" / "o200k_base.tiktoken").is_file()
    assert list((internal / "llama_cpp" / "lib").glob("libllama.so*"))
    assert (internal / "plugins" / "example-tools").is_dir()
    assert list(internal.rglob("libqoffscreen.so")) and list(internal.rglob("libqxcb.so"))
    desktop = (bundle / "share" / "applications" / "harmony-desk.desktop").read_text()
    assert "Exec=harmony-desk" in desktop and "Icon=harmony-desk" in desktop
    assert (bundle / "share" / "metainfo" / "io.github.harmonydesk.HarmonyDesk.metainfo.xml").is_file()
    (archive,) = out.glob("harmony-desk-*-linux-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "harmony-desk/harmony-desk" in names and "harmony-desk/install.sh" in names
    version = subprocess.run([str(bundle / "harmony-desk"), "--version"], capture_output=True, text=True,
                             timeout=60)
    from app import __version__

    assert version.stdout.strip() == f"harmony-desk {__version__}"
    tools = subprocess.run([str(bundle / "harmony-desk"), "tools", "list"], capture_output=True, text=True,
                           timeout=120, env={**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config")})
    assert "functions.word_count" in tools.stdout and "example-tools" in tools.stdout  # bundled plugins
    python = subprocess.run([str(bundle / "harmony-desk"), "tools", "call", "python",
                             '{"code": "import sys, numpy; print(sys.platform, numpy.arange(4).sum())"}'],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")})
    assert python.returncode == 0, python.stdout + python.stderr  # the boundary ships in the bundle
    assert json.loads(python.stdout) == {"ok": True, "content": "wasi 6\n"}
    catalog = subprocess.run([str(bundle / "harmony-desk"), "models", "catalog"], capture_output=True, text=True,
                             timeout=120)
    assert "gpt-oss-120b" in catalog.stdout, catalog.stderr  # the catalogue ships in resources/
