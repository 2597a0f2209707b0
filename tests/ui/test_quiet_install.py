"""L14: the install is quiet and whole — pyproject.toml names every package the app has (a
package left out is missing from a wheel, and setuptools warns of its files on every install),
every folder of bundled resources, and its licence as an SPDX expression (the TOML table form
is deprecated, warned three times an install)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packaging() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def code_packages() -> set[str]:
    """Each folder under app/ that holds Python files, as a dotted name."""
    found = {p.parent for p in (ROOT / "app").rglob("*.py") if "__pycache__" not in p.parts}
    return {".".join(d.relative_to(ROOT).parts) for d in found}


def resource_packages(mapped: str, folder: Path) -> set[str]:
    """The bundled resources' folders (each holding files), as packages under `mapped`."""
    folders = {f.parent for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts}
    return {".".join((mapped, *d.relative_to(folder).parts)) for d in folders}


def test_every_package_and_resource_folder_is_named_once() -> None:
    tool = packaging()["tool"]
    assert isinstance(tool, dict)
    setuptools = tool["setuptools"]
    listed = setuptools["packages"]
    assert len(listed) == len(set(listed))
    (mapped, folder), *_ = setuptools["package-dir"].items()
    expected = code_packages() | resource_packages(mapped, ROOT / folder)
    assert set(listed) == expected
    data = setuptools["package-data"]
    for package in resource_packages(mapped, ROOT / folder):
        where = ROOT / folder / Path(*package.split(".")[1:])
        files = [f.name for f in where.iterdir() if f.is_file() and f.suffix != ".py"]
        patterns = data.get(package, [])
        assert all(any(Path(f).match(p) for p in patterns) for f in files), package


def test_the_licence_is_an_spdx_expression_and_the_backend_reads_it() -> None:
    config = packaging()
    project = config["project"]
    assert isinstance(project, dict) and project["license"] == "MIT"
    system = config["build-system"]
    assert isinstance(system, dict)
    setuptools = next(r for r in system["requires"] if r.startswith("setuptools"))
    least = re.fullmatch(r"setuptools>=(\d+)", setuptools)
    assert least is not None and int(least.group(1)) >= 77  # the first to read the expression
