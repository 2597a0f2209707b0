"""Which program an MCP server's command runs, and what to say when its Python lacks a module.

Guarantees: a command that is a bare `python`, `python3` or `python3.N` (N the app's own minor
version) — the form Python MCP servers' READMEs and `docs/cli.md` use — runs the app's own
interpreter (`sys.executable`) wherever the app runs from source or a wheel, so a package
installed next to the app is found whatever `PATH` says; in a bundle (whose executable is not a
Python it can lend) and for any other command, the command is looked up on the server's `PATH`
(None when it is not there). `missing_module` turns a server's "No module named X" on stderr into
a paragraph for the error's details that names the Python that ran (and whether it is the
app's own) and how to fix it; "" when the server wrote no such line.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

_MISSING = re.compile(r"No module named ['\"]?([\w.]+)['\"]?")


def own_names() -> frozenset[str]:
    """The bare commands that mean the app's own interpreter."""
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return frozenset({"python", f"python{sys.version_info.major}", minor})


def lends_python() -> bool:
    """Whether the app runs on an interpreter a server may use (not a frozen bundle)."""
    return not getattr(sys, "frozen", False) and bool(sys.executable)


def resolve(command: str, path: str | None) -> str | None:
    """The program `command` runs (see the module guarantees)."""
    if lends_python() and _bare(command) in own_names():
        return sys.executable
    return shutil.which(command, path=path)


def _bare(command: str) -> str:
    """`command` without a Windows `.exe`; a path stays a path (never the app's Python)."""
    name = command.removesuffix(".exe") if sys.platform == "win32" else command
    return "" if os.sep in name or (os.altsep and os.altsep in name) else name


def missing_module(program: str | None, stderr: str) -> str:
    """A paragraph on the Python that lacked a module (see the module guarantees)."""
    found = _MISSING.search(stderr)
    if found is None or not program:
        return ""
    module, own = found.group(1), _same(program, sys.executable) and lends_python()
    install = (
        f"install the package that provides it into that Python (`{program} -m pip install …`)"
    )
    if own:
        return (
            f"The Python that ran it is the app's own ({program}), which has no module"
            f" “{module}”: {install}, or give the full path of a Python that has it as the"
            " command."
        )
    other = (
        f"use `python` as the command to run the app's own ({sys.executable}) once the package"
        " is installed there"
        if lends_python()
        else "give the full path of a Python that has it as the command"
    )
    return (
        f"The Python that ran it is {program}, not the app's own, and it has no module"
        f" “{module}”: {install}, or {other}."
    )


def _same(one: str, other: str) -> bool:
    """Whether two paths name the same file (a venv's `python` is a link: compared as given)."""
    return os.path.normcase(os.path.abspath(one)) == os.path.normcase(os.path.abspath(other))


__all__ = ["lends_python", "missing_module", "own_names", "resolve"]
