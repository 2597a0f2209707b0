"""What lies inside a library folder: the walk that finds a folder's files, and the checks that
hold an indexed file to the folder it was found in.

Guarantees: `walk` lists the files of a kind the library reads whose real path lies inside the
folder (sorted) and skips, each with a sentence, the links leading out of it (to a file: never
read; to a folder: never looked in); `inside` says whether a path, links followed now, lies
inside a folder's real path — two `realpath` calls and no read, cheap enough to run on every
passage before it is sent; `origins` says, for an index written before origins were recorded,
which folder each file was found in and through which path (a link leading out is found by
walking the folder once), and which files no folder holds (named on their own by the user).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from app.documents.extract import SUFFIXES


@dataclass(frozen=True)
class Walked:
    """What a folder holds for the library: its files, and the links leading out of it, each
    with the sentence that says why it was skipped."""

    files: list[Path]
    skipped: list[tuple[Path, str]]


def walk(folder: Path) -> Walked:
    """The files of a kind the library reads under `folder` whose real path lies inside it
    (sorted), and those that lie outside (a link to `/etc/passwd`) with the links to folders
    leading out (never followed), skipped and said (see the module guarantees)."""
    root = folder.resolve()
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for here, dirs, names in os.walk(folder, followlinks=False):
        for name in dirs:
            path = Path(here) / name
            if path.is_symlink() and not inside(path, root):
                said = f"a link to the folder {path.resolve()}, outside {folder}: not looked in"
                skipped.append((path, said))
        for name in names:
            path = Path(here) / name
            if path.suffix.lower() not in SUFFIXES:
                continue
            if not inside(path, root):
                said = f"a link to {path.resolve()}, outside {folder}: not indexed"
                skipped.append((path, said))
            elif path.is_file():
                files.append(path)
    return Walked(sorted(files), sorted(skipped))


def files_in(paths: list[Path]) -> list[Path]:
    """The files named, and the readable files inside the folders named (sorted; `walk`)."""
    out: list[Path] = []
    for path in paths:
        out += walk(path).files if path.is_dir() else [path]
    return out


def inside(path: str | Path, folder: str | Path) -> bool:
    """Whether `path`, links followed now, lies inside `folder` (its links followed too)."""
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(folder))
    return real == root or root in real.parents


def removed_notice(real: str, folder: str) -> str:
    """Why a file indexed through a link leading out of its folder was removed."""
    return f"a link to {real}, outside {folder}: not indexed, and removed from the library"


def removed_count(n: int) -> str:
    """How many were removed and why, in one sentence."""
    files = f"{n} file{'s' * (n != 1)}"
    return f"{files} removed from the library: reached through a link leading out of its folder"


def origins(paths: Iterable[str], folders: Iterable[str]) -> dict[str, tuple[str, str]]:
    """For an index written before origins were recorded: each path's (source, folder) — the
    path it was found by and the folder holding it; a file a link leading out points at (or one
    under a linked folder's target) is held to the folder of that link, its source the link;
    ("", "") for a file no folder holds (named on its own)."""
    found = {p: ("", "") for p in paths}
    present = [f for f in folders if Path(f).is_dir()]
    for folder in present:  # inside a folder first: a link from another cannot take it
        for path in found:
            if found[path] == ("", "") and _within(path, folder):
                found[path] = (path, folder)
    for folder in present:
        for link, _said in walk(Path(folder)).skipped:
            target = os.path.realpath(link)
            for path in (p for p in found if found[p] == ("", "") and _within(p, target)):
                found[path] = (str(link / Path(path).relative_to(target)), folder)
    return found


def _within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or under it, as written (no link followed)."""
    return path == folder or Path(folder) in Path(path).parents


__all__ = ["Walked", "files_in", "inside", "origins", "removed_count", "removed_notice", "walk"]
