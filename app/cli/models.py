"""`harmony-desk models ...`: the model library on the command line.

Guarantees: `list` and `info` read headers only (never the weights); `info` prints all header
metadata as JSON (arrays too long to print are summarised with their type and length);
`download` shows one progress bar on a terminal (a line per 10% otherwise), resumes a
partial file left by an earlier run, stops cleanly on Ctrl+C keeping what was fetched, and
exits non-zero with the reason on any failure; `delete` moves a model to the trash.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.domain.library import DownloadProgress, ModelEntry, human_count, human_size
from app.domain.terminal import printable, raw_terminal
from app.errors import DownloadError, HarmonyDeskError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", help="the models in the models folders")
    listing.add_argument("--json", action="store_true", help="one JSON object per model")
    listing.add_argument("--ctx", type=int, help="context length for the memory estimate")
    listing.add_argument(
        "--parallel",
        type=int,
        metavar="N",
        help="answers at once for the memory estimate, each with its own cache (default: the"
        " settings', as the window and serve load)",
    )
    info = verbs.add_parser("info", help="all header metadata of a GGUF file, as JSON")
    info.add_argument("path")
    info.add_argument("--tensors", action="store_true", help="the tensor table too")
    download = verbs.add_parser("download", help="download a model (a URL or a catalogue id)")
    download.add_argument("source", help="a direct URL to a .gguf file, or a catalogue id")
    download.add_argument("--sha256", help="the file's sha256 (checked when the file is whole)")
    download.add_argument("--dest", help="the folder (default: the models folder)")
    verbs.add_parser("catalog", help="the catalogue of well-known models")
    folders = verbs.add_parser("folders", help="the folders searched for models")
    folders.add_argument("action", nargs="?", choices=["add", "remove"])
    folders.add_argument("folder", nargs="?")
    default = verbs.add_parser("default", help="the model loaded at start")
    default.add_argument("path", nargs="?", help="a model file; `bundled` for the bundled one")
    delete = verbs.add_parser("delete", help="move a model (every part) to the trash")
    delete.add_argument("path")


def run(args: argparse.Namespace) -> int:
    handlers = {
        "list": _list,
        "info": _info,
        "download": _download,
        "catalog": _catalog,
        "folders": _folders,
        "default": _default,
        "delete": _delete,
    }
    return handlers[args.verb](args)


def _entries() -> list[ModelEntry]:
    from app.library.bundled import assembled_default_model
    from app.library.folders import library_folders
    from app.library.scan import scan
    from app.settings import load_settings

    return scan(library_folders(load_settings()), bundled=assembled_default_model())


def _list(args: argparse.Namespace) -> int:
    from app.engine.local.memory import available_memory, estimate_memory
    from app.settings import load_settings

    settings = load_settings()
    n_ctx, answers = args.ctx or settings.context_length, args.parallel or settings.parallel
    have = available_memory()
    entries = _entries()
    for e in entries:
        memory = estimate_memory(e, n_ctx, sequences=answers, available=have)
        if args.json:
            row: dict[str, Any] = asdict(e)
            row["memory"] = {**asdict(memory), "total": memory.total, "fit": memory.verdict.value}
            print(json.dumps(row))
            continue
        if e.problem:
            print(f"{e.name}\n  {e.path}\n  cannot be used: {e.problem}")
            continue
        parts = f", {len(e.files)} parts" if len(e.files) > 1 else ""
        print(
            f"{e.name}{' (bundled default)' if e.bundled else ''}\n  {e.path}\n"
            f"  {e.architecture} · {human_count(e.parameters)} parameters · {e.quantization} ·"
            f" context {e.context_length:,} · {human_size(e.file_size)}{parts} ·"
            f" template {e.template}\n  memory: {memory.short()} at {n_ctx:,} tokens"
            f"{memory.at_once()} — {memory.verdict.value}"
        )
    if not entries and not args.json:
        from app.library.folders import models_dir

        print(f"No models yet. Put GGUF files in {models_dir()} or `harmony-desk models download`.")
    return 0


def _info(args: argparse.Namespace) -> int:
    from app.gguf.info import read_model

    info = read_model(args.path)
    metadata: dict[str, Any] = dict(info.metadata)
    for key, (kind, count) in info.omitted.items():
        metadata[key] = {"omitted": f"array of {count} {kind}", "length": count}
    out: dict[str, Any] = {
        "path": str(info.path),
        "gguf_version": info.version,
        "file_size": info.file_size,
        "tensor_count": len(info.tensors),
        "parameters": info.parameter_count,
        "quantization": info.quantization,
        "metadata": dict(sorted(metadata.items())),
    }
    if args.tensors:
        out["tensors"] = [
            {"name": t.name, "shape": list(t.shape), "type": t.ggml_type, "offset": t.offset}
            for t in info.tensors
        ]
    print(json.dumps(out, indent=1, ensure_ascii=False, default=str))
    return 0


def _catalog(_args: argparse.Namespace) -> int:
    from app.library.catalog import load_catalog

    for m in load_catalog().models:
        files = f" in {len(m.files)} files" if len(m.files) > 1 else ""
        print(f"{m.id}\n  {m.name} · {human_size(m.size)}{files} · {m.licence}\n  {m.description}")
    return 0


def _download(args: argparse.Namespace) -> int:
    from app.library.catalog import load_catalog
    from app.library.download import DownloadRequest, check_space
    from app.library.folders import models_dir
    from app.library.queue import DownloadQueue
    from app.settings import load_settings

    dest = Path(args.dest).expanduser() if args.dest else models_dir()
    if args.source.startswith(("http://", "https://")):
        requests = [DownloadRequest(args.source, dest, sha256=args.sha256)]
    else:
        model = load_catalog().find(args.source)
        if model is None:
            known = ", ".join(m.id for m in load_catalog().models)
            raise HarmonyDeskError(f"{args.source!r} is neither a URL nor a catalogue id ({known})")
        requests = model.requests(dest)
    check_space(requests, args.source)
    bar = _Bar()
    queue = DownloadQueue(load_settings().max_downloads, on_update=bar.update)
    ids = [queue.add(r) for r in requests]
    try:
        results = [queue.wait(i) for i in ids]
    except KeyboardInterrupt:
        queue.close()
        results = [queue.wait(i, timeout=10) for i in ids]
        bar.done()
        print("Paused; run the same command again to resume.", file=sys.stderr)
        return 130
    bar.done()
    failed = [r for r in results if r.state != "done"]
    for r in failed:
        print(f"harmony-desk: {DownloadError.code.value} {r.message}", file=sys.stderr)
    for r in results:
        if r.state == "done":
            print(r.message)
    return 1 if failed else 0


class _Bar:
    """One progress line for all the downloads of a command."""

    def __init__(self) -> None:
        self.jobs: dict[str, DownloadProgress] = {}
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()
        self.last_tenth = -1

    def update(self, p: DownloadProgress) -> None:
        with self.lock:
            self.jobs[p.job_id] = p
            done = sum(j.done for j in self.jobs.values())
            totals = [j.total for j in self.jobs.values()]
            total = sum(t for t in totals if t) if all(totals) else None
            rate = sum(j.rate for j in self.jobs.values())
            line = DownloadProgress("all", "", "", "running", done, total, rate).line()
            if self.tty:
                width = 30
                filled = int(width * done / total) if total else 0
                bar = "#" * filled + "-" * (width - filled)
                pct = f"{100 * done / total:5.1f}%" if total else "     "
                terminal = raw_terminal(sys.stderr)  # the bar's own \r and erase-line
                terminal.write(f"\r[{bar}] {pct} {printable(line)}\x1b[K")
                terminal.flush()
            elif total:
                tenth = int(10 * done / total)
                if tenth != self.last_tenth:
                    self.last_tenth = tenth
                    print(f"{10 * tenth}% {line}", file=sys.stderr)

    def done(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def _folders(args: argparse.Namespace) -> int:
    from app.library.folders import library_folders, with_folder, without_folder
    from app.settings import load_settings, save_settings

    settings = load_settings()
    if args.action:
        if not args.folder:
            raise HarmonyDeskError(f"`models folders {args.action}` needs a folder")
        change = with_folder if args.action == "add" else without_folder
        settings = change(settings, args.folder)
        save_settings(settings)
    for folder in library_folders(settings):
        print(folder)
    return 0


def _default(args: argparse.Namespace) -> int:
    from app.library.folders import set_default
    from app.settings import load_settings, save_settings

    settings = load_settings()
    if args.path:
        settings = set_default(settings, None if args.path == "bundled" else args.path)
        save_settings(settings)
    print(settings.default_model or "bundled")
    return 0


def _delete(args: argparse.Namespace) -> int:
    from app.library.folders import trash_model
    from app.library.scan import describe

    for moved in trash_model(describe(Path(args.path).expanduser().resolve())):
        print(f"moved to the trash: {moved}")
    return 0
