"""Connecting a coding agent to the local server, and undoing it: the one way both
`harmony-desk connect` and the window's Serve page do it (the client modules say what each
file gets; this module reads and writes the files).

Guarantees: every file is read and merged before any is written, so a file that cannot be read
(or holds a value of another kind where a change goes) changes nothing anywhere and raises an
`InvalidInputError` naming it; a file that cannot be written raises an `OutputError` (every
`OSError` becomes one of the two). A file is merged into, never replaced, written atomically,
and keeps its comments, key order and layout (`formats`, `nodes`; where the round-trip writer
would misplace a setting, the file is written anew without them, and the report says so); before
its first change a file with anything of the user's in it is copied next to it as
`NAME.harmony-desk.bak` (its bytes and mode), which later runs keep. `undo` works on each file
as it is now: it takes out what connect set and puts back the values connect replaced, as the
backup holds them, so what the user changed since stays (`merge.unmerge`); the file gets the
backup's mode back and the backup is kept, as `NAME.harmony-desk.old` (a later connect makes a
fresh backup; a later undo still puts back from it); a file connect made goes once nothing else
is in it. A report never holds a key, the server's token or one of the user's; `preview` shows
where each would go, and writes nothing.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.clients import PLACEHOLDER_KEY, Default, FileEdit, Target, client
from app.clients.formats import dump, load, render, start
from app.clients.merge import MISSING, Change, merge, only_defaults, shape, unmerge
from app.clients.nodes import plain, put, replace
from app.errors import InvalidInputError
from app.fileio import OutputError, private_folder, write_atomic, write_atomic_bytes
from app.inputs import read_text_file

BACKUP_SUFFIX = ".harmony-desk.bak"  # the file before connect's first change, while connected
KEPT_SUFFIX = ".harmony-desk.old"  # the same copy, kept after an undo
OUTPUT_SHARE = 4  # an answer may take at most a quarter of the context (and the server's cap)
MASK = "<the server's token, from the keyring>"
UNDO_TARGET = Target("http://127.0.0.1", "(undo)", "(undo)", 4096, 1024)  # every file a client has
SECRET_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|password)$")  # names of keys' keys


def root_of(url: str) -> str:
    """The server's root URL, given it or its `/v1` (no trailing slash)."""
    return re.sub(r"/v1$", "", url.rstrip("/"))


def target_for(url: str, key: str, model: str, context: int, cap: int) -> Target:
    """The server at `url` (its root, or its `/v1`) with `key` and `model`; answers capped at
    `cap` or a quarter of `context`, whichever is less (the prompt keeps the rest)."""
    return Target(root_of(url), key, model, context, min(cap, context // OUTPUT_SHARE))


@dataclass(frozen=True)
class Report:
    """What a run did (or would do), line by line; `note` is what the client's files cannot
    say (connect's only)."""

    lines: tuple[str, ...]
    note: str = ""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class _Planned:
    """One file's merge, before anything is written."""

    path: Path
    edit: FileEdit
    before: str | None  # the file's text (None: no file)
    document: Any
    made: list[Change]


def connect(name: str, target: Target, env: Mapping[str, str], home: Path) -> Report:
    """Merge `target` into client `name`'s files; what changed, file by file."""
    chosen = client(name)
    plans = _plans(name, target, env, home)
    lines: list[str] = []
    with _writing():
        for plan in plans:
            lines += _report(plan, *_write(plan), target)
    return Report(tuple(lines), chosen.NOTE)


def preview(name: str, target: Target, env: Mapping[str, str], home: Path) -> Report:
    """Client `name`'s files as `connect` would write them, keys not shown; writes nothing."""
    lines: list[str] = []
    for plan in _plans(name, target, env, home):
        state = "unchanged" if not plan.made else f"{len(plan.made)} change(s)"
        lines.append(f"--- {plan.path} ({state}; as it would be written, keys not shown)")
        shown = _masked(plan.document, "", plan.edit, target)
        lines.append(dump(plan.edit.format, shown, plan.before or "").rstrip("\n"))
    return Report(tuple(lines))


def undo(name: str, env: Mapping[str, str], home: Path) -> Report:
    """Take connect's changes out of client `name`'s files (see the guarantees)."""
    with _reading():
        plans = [_unplan(edit) for edit in client(name).edits(UNDO_TARGET, env, home)]
    lines: list[str] = []
    with _writing():
        for plan in plans:
            lines += _undo_file(plan)
    return Report(tuple(lines))


# --- reading and merging ---------------------------------------------------------------------


@contextmanager
def _reading() -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise InvalidInputError(f"cannot read {exc.filename}: {exc.strerror}") from exc


@contextmanager
def _writing() -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write {exc.filename}: {exc.strerror}") from exc


def _real(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path  # a dotfile's link stays a link


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _plans(name: str, target: Target, env: Mapping[str, str], home: Path) -> list[_Planned]:
    with _reading():
        return [_plan(edit) for edit in client(name).edits(target, env, home)]


def _read(path: Path, edit: FileEdit) -> tuple[str | None, Any]:
    """The file's text (None: no file) and its document (an empty one for no data)."""
    text = read_text_file(path) if path.exists() else None
    document = None if text is None else load(edit.format, text, path)
    if document is None:
        document = start(edit.format, shape(edit.changes), text or "")
    return text, document


def _plan(edit: FileEdit) -> _Planned:
    path = _real(edit.path)
    before, document = _read(path, edit)
    try:
        after, made = merge(document, edit.changes)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}: {exc.message}; nothing was changed") from exc
    return _Planned(path, edit, before, after, made)


def _nothing_else(edit: FileEdit, text: str, document: Any) -> bool:
    """Whether a file holds nothing but the keys connect sets: no other key, no comment."""
    left = unmerge(document, edit.changes)[0]
    return only_defaults(left, edit.changes) and not (edit.format != "json" and "#" in text)


def _connects_own(edit: FileEdit, text: str, document: Any) -> bool:
    """Whether connect made the file: nothing else is in it, and it holds as many of connect's
    keys as connect writes into a new file (one with only some, such as a user's own `model`,
    is the user's; one an earlier run wrote for another model is connect's)."""
    held = len(unmerge(document, edit.changes)[1])
    written = merge(start(edit.format, shape(edit.changes)), edit.changes)[1]
    changes = edit.changes if isinstance(edit.changes, Mapping) else {}
    defaults = sum(isinstance(value, Default) for value in changes.values())
    return held >= len(written) - defaults and _nothing_else(edit, text, document)


# --- writing and saying what changed ---------------------------------------------------------


def _write(plan: _Planned) -> tuple[Path | None, bool]:
    """Write `plan` (its backup first, where one is due); the backup made now, if any, and
    whether the file's comments and layout were kept (`formats.render`)."""
    if not plan.made:
        return None, True
    backup = _beside(plan.path, BACKUP_SUFFIX)
    made = None
    if plan.before is not None and not backup.exists():
        before = load(plan.edit.format, plan.before, plan.path)
        if before is not None and not _connects_own(plan.edit, plan.before, before):
            _copy_exact(plan.path, backup)
            made = backup
    private_folder(plan.path.parent)
    text, kept = render(plan.edit.format, plan.document, plan.before or "")
    write_atomic(plan.path, text)
    return made, kept


def _copy_exact(source: Path, target: Path) -> None:
    """`source`'s bytes and mode to `target`, atomically."""
    write_atomic_bytes(target, source.read_bytes())
    os.chmod(target, stat.S_IMODE(source.stat().st_mode))


def _report(plan: _Planned, backup: Path | None, kept: bool, target: Target) -> list[str]:
    if not plan.made:
        return [f"{plan.path}: already set; nothing changed"]
    saved = f" (the original was copied to {backup} first)" if backup else ""
    kept_copy = _beside(plan.path, BACKUP_SUFFIX)
    if not backup and kept_copy.exists():
        saved = f" (the original from before connect's first change stays in {kept_copy})"
    said = [f"  {_said(c, plan.edit, target)}" for c in plan.made]
    return [
        f"{plan.path}{saved}:",
        *said,
        *_unkept(kept, backup or (kept_copy if kept_copy.exists() else None)),
    ]


def _unkept(kept: bool, copy: Path | None) -> list[str]:
    """The line that says a file's comments and layout could not be kept, where they were not."""
    if kept:
        return []
    where = f": the file as it was is in {copy}" if copy else ""
    return [f"  (its comments and layout could not be kept{where}; its settings were)"]


def _said(change: Change, edit: FileEdit, target: Target) -> str:
    name = change.where.rsplit(".", 1)[-1]
    old, new = (_shown(v, name, edit, target) for v in (change.old, change.new))
    if change.old is MISSING:
        return f"{change.where}: added {new}"
    if change.new is MISSING:
        return f"{change.where}: removed (was {old})"
    return f"{change.where}: {old} → {new}"


def _shown(value: Any, name: str, edit: FileEdit, target: Target) -> str:
    return json.dumps(_hidden(value, name, edit, target), ensure_ascii=False, default=str)


def _hidden(value: Any, name: str, edit: FileEdit, target: Target) -> Any:
    """Plain `value` with every key in it masked: strings under a key's name (`apiKey`,
    `…_TOKEN`; every one in a file of keys), and the server's token wherever it is."""
    if isinstance(value, dict):
        return {k: _hidden(v, str(k), edit, target) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(v, name, edit, target) for v in value]
    if not isinstance(value, str) or value == PLACEHOLDER_KEY:
        return value
    if value == target.key:
        return MASK
    if edit.all_secret or SECRET_NAME.search(name):
        return "<a key, not shown>"
    return value


def _masked(document: Any, name: str, edit: FileEdit, target: Target) -> Any:
    """`document` with every key masked (`_hidden`), in place; its comments kept."""
    if isinstance(document, Mapping):
        for key in list(document):
            _mask_at(document, key, str(key), edit, target)
    elif isinstance(document, list):
        for i in range(len(document)):
            _mask_at(document, i, name, edit, target)
    return document


def _mask_at(container: Any, key: Any, name: str, edit: FileEdit, target: Target) -> None:
    value = container[key]
    if isinstance(value, Mapping | list):
        _masked(value, name, edit, target)
        return
    hidden = _hidden(plain(value), name, edit, target)
    if hidden != plain(value):
        (replace if isinstance(container, list) else put)(container, key, hidden)


# --- undo ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Undo:
    """One file's undo, before anything is written."""

    path: Path
    edit: FileEdit
    text: str | None  # the file as it is now (None: no file)
    left: Any  # what stays in it
    done: list[Change]
    copy: Path | None  # where the values connect replaced were read (the backup, or its kept copy)
    original: Any  # the document in `copy` (None: no copy, the file was connect's)


def _unplan(edit: FileEdit) -> _Undo:
    path = _real(edit.path)
    backup, kept = _beside(path, BACKUP_SUFFIX), _beside(path, KEPT_SUFFIX)
    copy = backup if backup.exists() else kept if kept.exists() else None
    original = None
    if copy is not None:
        original = load(edit.format, read_text_file(copy), copy)
    text, document = _read(path, edit)
    if text is None:
        return _Undo(path, edit, None, None, [], copy, original)
    try:
        left, done = unmerge(document, edit.changes, original)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}: {exc.message}; nothing was changed") from exc
    return _Undo(path, edit, text, left, done, copy, original)


def _undo_file(plan: _Undo) -> list[str]:
    lines = _undo_text(plan)
    backup = _beside(plan.path, BACKUP_SUFFIX)
    if backup.exists():
        kept = _beside(plan.path, KEPT_SUFFIX)
        os.replace(backup, kept)
        lines.append(f"  (the copy from before connect's first change is kept in {kept})")
    return lines


def _undo_text(plan: _Undo) -> list[str]:
    path, edit, original = plan.path, plan.edit, plan.original
    if plan.text is None:
        return [f"{path}: no such file; nothing to undo"]
    if not plan.done:
        return [f"{path}: nothing of Harmony Desk's in it; left as it is"]
    if original is None and _nothing_else(edit, plan.text, plan.left):
        path.unlink()
        return [f"{path}: removed (it held only what connect added)"]
    text, kept = render(edit.format, plan.left, plan.text)
    write_atomic(path, text)
    if original is not None and plan.copy is not None:
        os.chmod(path, stat.S_IMODE(plan.copy.stat().st_mode))
    said = [f"  {_said(change, edit, UNDO_TARGET)}" for change in plan.done]
    put_back = ", what it replaced put back" if original is not None else ""
    how = f"what connect added taken out{put_back}"
    return [
        f"{path} ({how}; everything else in it as it is now):",
        *said,
        *_unkept(kept, plan.copy),
    ]


__all__ = [
    "BACKUP_SUFFIX",
    "KEPT_SUFFIX",
    "Report",
    "connect",
    "preview",
    "root_of",
    "target_for",
    "undo",
]
