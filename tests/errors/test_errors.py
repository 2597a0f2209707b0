"""The error tree is drawn once: every exception the app defines is a `HarmonyDeskError` with an
`ErrorCode` (private control-flow signals excepted), and none is recognised by its text."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import app
from app.errors import ErrorCode, HarmonyDeskError

APP = Path(app.__file__).parent


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages([str(APP)], prefix="app.")]
    return [n for n in names if not n.endswith("__main__")]


def test_every_exception_the_app_defines_is_under_harmony_desk_error() -> None:
    found = []
    for name in _modules():
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException) and not cls_name.startswith("_"):
                found.append(cls)
                assert issubclass(cls, HarmonyDeskError), f"{name}.{cls_name} is outside the error tree"
                assert isinstance(cls.code, ErrorCode), f"{name}.{cls_name} has no ErrorCode"
    assert len(found) >= 15  # the walk saw the tree, not an empty package


def test_no_error_is_recognised_by_its_text() -> None:
    pattern = re.compile(r"in str\((exc|e|error)\)|str\((exc|e)\)\.(startswith|endswith)|in (exc|e)\.message")
    offenders = [f"{p.relative_to(APP)}:{i}" for p in APP.rglob("*.py")
                 for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not offenders, offenders


def test_the_error_tree_in_the_docstring_names_every_error_the_app_raises() -> None:
    import app.errors

    for info in pkgutil.walk_packages(app.__path__, "app."):
        if info.name != "app.__main__":
            importlib.import_module(info.name)
    found = set()
    stack = [HarmonyDeskError]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub.__module__.startswith("app."):
                found.add(sub.__name__)
                stack.append(sub)
    assert len(found) > 20
    drawn = app.errors.__doc__ or ""
    assert {n for n in found if n not in drawn} == set()
