"""`harmony-desk connect CLIENT [--print] [--base-url URL] [--model NAME] [--undo]`: point a
coding agent's own user-level configuration at the local server (`app/clients/`).

Guarantees: the key is the server's token when the keyring holds one (read, never made), else
a placeholder a keyless loopback server takes; the model is the one `serve` would load (its
file's stem, the name the server gives it), with the context `serve` would choose for it now
and answers capped at `serve`'s limit or a quarter of that context, whichever is less.
Every file is read and merged before any is written, so a file that cannot be read changes
nothing anywhere; a file is merged into, never replaced, and written atomically; before its
first change a file with anything of the user's in it is copied next to it as
`NAME.harmony-desk.bak` (its bytes and mode, written atomically), which later runs keep. What
changed is printed key by key, with how to undo it; no key is ever printed, the server's token
or one of the user's (`--print` shows where each would go). `--undo` restores each backup, or,
for a file connect made, removes what it added (the file too when nothing else is left in it).
`--print` writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.clients import CLIENTS, PLACEHOLDER_KEY, Client, FileEdit, Target, client
from app.clients.formats import dump, load
from app.clients.merge import MISSING, Change, empty, merge, unmerge
from app.fileio import private_folder, write_atomic, write_atomic_bytes
from app.inputs import read_text_file

DEFAULT_ROOT = "http://127.0.0.1:8080"
BACKUP_SUFFIX = ".harmony-desk.bak"
FALLBACK_CONTEXT = 4096  # a model known by name only: the app's own default context
OUTPUT_SHARE = 4  # an answer may take at most a quarter of the context (and serve's cap)
MASK = "<the server's token, from the keyring>"
UNDO_KEY = "(undo)"  # a key that names every file a client may have, so that undo finds each
SECRET_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|password)$")  # names of keys' keys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("client", choices=list(CLIENTS), help="the coding agent to configure")
    either = parser.add_mutually_exclusive_group()
    either.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="print the files as they would be written; write nothing",
    )
    parser.add_argument(
        "--base-url",
        default=DEFAULT_ROOT,
        metavar="URL",
        help=f"the server (default {DEFAULT_ROOT}); each client gets the path it wants",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="the model name clients ask for, or a GGUF file (default: the model `serve`"
        " loads); the server answers any name with its model",
    )
    either.add_argument(
        "--undo",
        action="store_true",
        help="restore the files' backups (or remove what connect added)",
    )


@dataclass(frozen=True)
class Planned:
    """One file's merge, before anything is written."""

    path: Path
    edit: FileEdit
    before: str | None  # the file's text (None: no file)
    after: Any
    made: list[Change]


def run(args: argparse.Namespace) -> int:
    chosen = client(args.client)
    if args.undo:
        return _undo(chosen, _target(args, key=UNDO_KEY)[0])
    target, facts = _target(args, key=None)
    plans = [_plan(edit) for edit in chosen.edits(target, os.environ, Path.home())]
    if args.print_only:
        return _print(plans, target)
    print("\n".join([f"Connected {args.client} to Harmony Desk at {target.root}", *facts]))
    for plan in plans:
        _report(plan, _write(plan), target)
    print(chosen.NOTE)
    print(f"Undo: harmony-desk connect {args.client} --undo")
    return 0


def _target(args: argparse.Namespace, key: str | None) -> tuple[Target, list[str]]:
    """What the client is pointed at (with `key`, else the one `_key` finds), and lines saying
    where each part came from."""
    from app.server.options import ServeOptions

    root = re.sub(r"/v1$", "", args.base_url.rstrip("/"))
    name, path = _model(args.model)
    context, how = _context(path)
    whose = ""
    if key is None:
        key, whose = _key()
    max_tokens = min(ServeOptions().max_tokens, context // OUTPUT_SHARE)  # the prompt keeps 3/4
    facts = [
        f"  model: {name} (context {context:,} tokens, {how}; answers up to {max_tokens:,} tokens)",
        f"  key: {whose}",
    ]
    return Target(root, key, name, context, max_tokens), facts


def _key() -> tuple[str, str]:
    """The server's token if the keyring holds one (never made here), else the placeholder."""
    from app.cli.serve import TOKEN_KEY
    from app.secrets import Secrets

    keyring = Secrets()
    token = keyring.get(TOKEN_KEY)
    if token:
        return token, "the server's token, from the keyring"
    where = "no usable keyring here" if keyring.problem else "the keyring holds no server token"
    return PLACEHOLDER_KEY, (
        f'"{PLACEHOLDER_KEY}" ({where}: a server on loopback without --require-token takes any'
        " key; once `serve --require-token` has made a token, connect again to use it)"
    )


def _model(given: str | None) -> tuple[str, Path | None]:
    """The model's name as the server gives it (a file's stem), and its file where known."""
    from app.errors import InvalidInputError

    if given is None or given == "default":
        from app.library.bundled import CHAT_FILE, assembled_default_model
        from app.library.folders import startup_model
        from app.settings import load_settings

        chosen = startup_model(load_settings())
        path = Path(chosen) if chosen else assembled_default_model() or Path(CHAT_FILE)
        return path.stem, path if path.is_file() else None
    path = Path(given).expanduser()
    if path.is_file():
        return path.stem, path
    if path.suffix.lower() == ".gguf":
        raise InvalidInputError(f"the model {given} is not a file")
    return given, None


def _context(path: Path | None) -> tuple[int, str]:
    """The context `serve` would load `path` with now (its trained one, halved to fit)."""
    if path is None:
        return FALLBACK_CONTEXT, "assumed: the model's file is not known here"
    from app.engine.local.memory import context_that_fits
    from app.errors import HarmonyDeskError
    from app.gguf.info import read_model
    from app.settings import load_settings

    try:
        model = read_model(path)
    except HarmonyDeskError:
        return FALLBACK_CONTEXT, f"assumed: {path.name} could not be read"
    parallel = max(1, load_settings().parallel)
    n_ctx, _ = context_that_fits(model, model.context_length, sequences=parallel)
    return n_ctx, f"as serve would load it now for {parallel} answers at once"


def _plan(edit: FileEdit) -> Planned:
    """`edit` merged into its file's data; an `InvalidInputError` naming the file if it cannot
    be read or holds a value of another kind where a change goes."""
    from app.errors import InvalidInputError

    path = edit.path.resolve() if edit.path.is_symlink() else edit.path  # a dotfile's link stays
    before = read_text_file(path) if path.exists() else None
    data = None if before is None else load(edit.format, before, path)
    try:
        after, made = merge(empty(edit.changes) if data is None else data, edit.changes)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}: {exc.message}; nothing was changed") from exc
    return Planned(path, edit, before, after, made)


def _write(plan: Planned) -> Path | None:
    """Write `plan` (its backup first, where one is due); the backup made now, if any."""
    if not plan.made:
        return None
    backup = _backup(plan.path)
    made = None
    if plan.before is not None and not backup.exists() and not _ours_only(plan):
        _copy_exact(plan.path, backup)
        made = backup
    private_folder(plan.path.parent)
    write_atomic(plan.path, dump(plan.edit.format, plan.after))
    return made


def _ours_only(plan: Planned) -> bool:
    """Whether the file holds nothing but what connect adds (it made the file): no backup."""
    data = load(plan.edit.format, plan.before or "", plan.path)
    return data is None or unmerge(data, plan.edit.changes)[0] is None


def _backup(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _copy_exact(source: Path, target: Path) -> None:
    """`source`'s bytes and mode to `target`, atomically."""
    write_atomic_bytes(target, source.read_bytes())
    os.chmod(target, stat.S_IMODE(source.stat().st_mode))


def _report(plan: Planned, backup: Path | None, target: Target) -> None:
    if not plan.made:
        print(f"{plan.path}: already set; nothing changed")
        return
    saved = f" (the original was copied to {backup} first)" if backup else ""
    if not backup and _backup(plan.path).exists():
        saved = f" (the original from before connect's first change stays in {_backup(plan.path)})"
    print(f"{plan.path}{saved}:")
    for change in plan.made:
        print(f"  {_said(change, plan.edit, target)}")
    if plan.before is not None and plan.edit.format != "json" and _has_comments(plan.before):
        print(f"  (its comments were not kept: the original is in {_backup(plan.path)})")


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
    """`value` with every key in it masked: strings under a key's name (`apiKey`,
    `…_TOKEN`; every one in a file of keys), and the server's token wherever it is."""
    if isinstance(value, dict):
        return {k: _hidden(v, k, edit, target) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(v, name, edit, target) for v in value]
    if not isinstance(value, str) or value == PLACEHOLDER_KEY:
        return value
    if value == target.key:
        return MASK
    if edit.all_secret or SECRET_NAME.search(name):
        return "<a key, not shown>"
    return value


def _has_comments(text: str) -> bool:
    return re.search(r"^\s*#", text, re.MULTILINE) is not None


def _print(plans: list[Planned], target: Target) -> int:
    for plan in plans:
        state = "unchanged" if not plan.made else f"{len(plan.made)} change(s)"
        print(f"--- {plan.path} ({state}; as it would be written, keys not shown)")
        print(dump(plan.edit.format, _hidden(plan.after, "", plan.edit, target)), end="")
    print("Nothing was written (--print).", file=sys.stderr)
    return 0


def _undo(chosen: Client, target: Target) -> int:
    for edit in chosen.edits(target, os.environ, Path.home()):
        path = edit.path.resolve() if edit.path.is_symlink() else edit.path
        backup = _backup(path)
        if backup.exists():
            _copy_exact(backup, path)
            backup.unlink()
            print(f"{path}: restored from {backup} (the backup is removed)")
        elif path.exists():
            _remove_ours(path, edit, target)
        else:
            print(f"{path}: no such file; nothing to undo")
    return 0


def _remove_ours(path: Path, edit: FileEdit, target: Target) -> None:
    """Undo in a file connect made (no backup): take out what it added."""
    data = load(edit.format, read_text_file(path), path)
    left, removed = unmerge(empty(edit.changes) if data is None else data, edit.changes)
    if not removed:
        print(f"{path}: nothing of Harmony Desk's in it; left as it is")
        return
    if left is None:
        path.unlink()
        print(f"{path}: removed (it held only what connect added)")
        return
    write_atomic(path, dump(edit.format, left))
    print(f"{path}:")
    for change in removed:
        print(f"  {_said(change, edit, target)}")


__all__ = ["BACKUP_SUFFIX", "add_arguments", "run"]
