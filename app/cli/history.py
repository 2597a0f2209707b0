"""`harmony-desk history list|export|import`: the window's conversations on the command line.

Guarantees: `list` shows id, title, message count and last change (pinned first), optionally
filtered by a full-text search; `export` writes one conversation, or every one (`--all`, one file
each into a folder), as OpenChatML, its JSON projection or Markdown — the first two carrying
the files and images the messages had attached (their content, or with `--no-files` only their
name and sha256); `import` reads OpenChatML, the JSON projection, LM Studio conversations and
Open WebUI exports, reports what it could not map, stores all of a file or nothing (exit status
2 with the error's code and place), and keeps the attached files and images the file carried
(each one it could not restore named on stderr — an image missing stays in the conversation,
shown as a placeholder — the conversation imported all the same).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from app.documents.carry import carried, restore
from app.documents.kept import KeptFiles
from app.domain.history import ChatDoc
from app.errors import InvalidInputError
from app.fileio import write_atomic, write_output
from app.store.exchange import FORMATS, doc_messages, export
from app.store.history import HistoryStore
from app.store.importers import import_file


def add_arguments(history: argparse.ArgumentParser) -> None:
    verbs = history.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", help="the saved conversations")
    listing.add_argument("--search", default="", help="only those whose text matches")
    out = verbs.add_parser("export", help="write conversations to files")
    out.add_argument("--all", action="store_true", help="every conversation, into a folder")
    out.add_argument("--format", choices=FORMATS, default="ocm")
    out.add_argument(
        "--no-files",
        action="store_true",
        help="attached files as references (name, sha256) instead of their content",
    )
    out.add_argument(
        "target",
        nargs="+",
        metavar="ID OUT",
        help="a conversation id and a file; with --all, only a folder",
    )
    imp = verbs.add_parser("import", help="OpenChatML, JSON projection, LM Studio, Open WebUI")
    imp.add_argument("file")


def _list(store: HistoryStore, search: str) -> int:
    for doc in store.listed(search):
        full = store.load(doc.id)
        count = len(doc_messages(full)) if full is not None else 0
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(doc.updated))
        pin = "*" if doc.pinned else " "
        print(f"{doc.id}  {pin} {when}  {count:5d} messages  {doc.title}")
    return 0


def _written(doc: ChatDoc, args: argparse.Namespace, kept: KeptFiles) -> str:
    files = [] if args.format == "md" else carried(doc, kept, content=not args.no_files)
    return export(doc, args.format, files)


def _export(store: HistoryStore, args: argparse.Namespace, kept: KeptFiles) -> int:
    ext = {"ocm": "ocm", "json": "json", "md": "md"}[args.format]
    if len(args.target) != (1 if args.all else 2):
        raise InvalidInputError("give a conversation id and a file, or --all and a folder")
    if args.all:
        folder = Path(args.target[0])
        folder.mkdir(parents=True, exist_ok=True)
        docs = [store.load(d.id) for d in store.listed()]
        for doc in docs:
            if doc is not None:
                write_atomic(folder / f"{doc.id}.{ext}", _written(doc, args, kept))
        print(f"{len(docs)} conversations written to {folder}", file=sys.stderr)
        return 0
    doc_id, out = args.target
    doc = store.load(doc_id)
    if doc is None:
        raise InvalidInputError(f"no conversation {doc_id!r}; `harmony-desk history list` shows it")
    write_output(out, _written(doc, args, kept))
    return 0


def _import(store: HistoryStore, file: str, kept: KeptFiles) -> int:
    result = import_file(Path(file))
    store.save_many(result.docs)
    for doc in result.docs:
        print(f"{doc.id}  {doc.title}")
        for note in restore(doc, result.attachments.get(doc.id), kept):
            print(f"attachment not restored: {note}", file=sys.stderr)
    for note in result.unmapped:
        print(f"not imported: {note}", file=sys.stderr)
    print(
        f"{len(result.docs)} conversations imported from {file} ({result.source})", file=sys.stderr
    )
    return 0


def run(args: argparse.Namespace) -> int:
    store = HistoryStore()
    kept = KeptFiles()
    try:
        if args.verb == "list":
            return _list(store, args.search)
        if args.verb == "export":
            return _export(store, args, kept)
        return _import(store, args.file, kept)
    finally:
        kept.close()
        store.close()
