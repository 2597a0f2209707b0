"""Layering: no Qt in the display-free packages; domain imports nothing of the app."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"
NO_QT = ["domain", "harmony", "templates", "engine", "tools", "store", "library", "server", "documents"]


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", NO_QT)
def test_no_qt_outside_the_ui(package: str) -> None:
    for path in (APP / package).rglob("*.py"):
        bad = {n for n in imports(path) if n.split(".")[0] in ("PySide6", "qasync", "PyQt5", "PyQt6")}
        assert not bad, f"{path} imports {bad}"


def test_domain_imports_nothing_of_the_app_but_errors() -> None:
    for path in (APP / "domain").rglob("*.py"):
        inner = {n for n in imports(path) if n.startswith("app.") and not n.startswith("app.domain")}
        assert inner <= {"app.errors"}, f"{path} imports {inner}"


def test_every_module_opens_with_a_docstring() -> None:
    for path in APP.rglob("*.py"):
        assert ast.get_docstring(ast.parse(path.read_text())), f"{path} has no docstring"


def test_the_ui_binds_to_controllers_and_domain_only() -> None:
    for path in (APP / "ui").rglob("*.py"):
        inner = {n for n in imports(path) if n.startswith("app.")}
        bad = {n for n in inner if n.split(".")[1] not in ("ui", "controllers", "domain")}
        assert not bad, f"{path} imports {bad}"


def test_the_library_uses_the_engine_never_the_window_or_the_store() -> None:
    for path in (APP / "library").rglob("*.py"):
        inner = {n.split(".")[1] for n in imports(path) if n.startswith("app.")}
        assert not inner & {"ui", "controllers", "store", "tools"}, (path, inner)


def test_controllers_never_import_the_ui() -> None:
    for path in (APP / "controllers").rglob("*.py"):
        assert not {n for n in imports(path) if n.startswith("app.ui")}, path


def test_the_qt_binding_keeps_reference_counts(qapp: object) -> None:
    """qasync starts and kills a Qt timer for every callback; PySide6 6.12.0's killTimer dropped
    a reference to None each time, and the app crashed after some thousands of callbacks."""
    import sys

    from PySide6.QtCore import QObject

    owner = QObject()
    before = sys.getrefcount(None)
    for _ in range(20_000):
        owner.killTimer(owner.startTimer(1000))
    assert abs(sys.getrefcount(None) - before) < 1000


def test_the_store_depends_on_domain_and_harmony_only() -> None:
    allowed = {"store", "domain", "harmony", "errors", "paths", "fileio", "inputs"}
    for path in (APP / "store").rglob("*.py"):
        bad = {n for n in imports(path) if n.startswith("app.") and n.split(".")[1] not in allowed}
        assert not bad, f"{path} imports {bad}"


# The map in ARCHITECTURE.md: which package may import which. The small shared modules (errors,
# paths, atomic files, bounded input readers, bundled resources, settings, the keyring) serve all.
SHARED = {"errors", "paths", "fileio", "inputs", "resources", "settings", "secrets"}
MAP = {
    "harmony": {"domain"},
    "templates": {"domain", "harmony"},
    "tools": {"domain"},
    "engine": {"domain", "harmony", "templates", "tools"},
    "store": {"domain", "harmony"},
    "library": {"domain", "engine", "templates"},
    "server": {"domain", "engine"},  # HTTP in, the engine's turn out
    "documents": {"domain"},  # files to text, chunks, the index: no model, no window
    # the window serves its own model: the server is one more thing the controllers drive
    "controllers": {"domain", "harmony", "templates", "engine", "tools", "store", "library", "server", "documents"},
    "ui": {"controllers", "domain"},
}


@pytest.mark.parametrize("package", sorted(MAP))
def test_each_package_imports_only_what_the_map_allows(package: str) -> None:
    for path in (APP / package).rglob("*.py"):
        inner = {n.split(".")[1] for n in imports(path) if n.startswith("app.") and n.count(".") >= 1}
        bad = inner - MAP[package] - SHARED - {package}
        assert not bad, f"{path} imports {sorted(bad)}"

