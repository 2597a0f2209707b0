"""`harmony-desk documents add|list|search|refresh|remove`: the documents library.

Guarantees: `add PATH…` indexes files and every readable file under folders (a folder is
remembered: files that appear in it later are indexed by the next refresh), one line each on
stderr (chunks, or the notice of what could not be read; an unchanged file is not read
again); `list` prints one JSON line per document; `search "QUERY" [--k 5] [--words-only]`
refreshes the library (new, changed and removed files), then prints one JSON line per hit,
best first: `file`, `page` (1-based) or `lines`, `text`, `score`; `refresh` says what it
did; `remove PATH` forgets a file, or a folder and the files under it. A path that does not
exist is exit 2. `add`, `search` and `refresh` say on stderr how many files indexed before
through a link leading out of their folder they removed (`refresh` and `add` name each, with
the sentence that says why).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.documents.contained import removed_count
from app.documents.index import Added, DocumentIndex
from app.errors import InvalidInputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="index files, and the files under folders")
    add.add_argument("paths", nargs="+", type=Path)
    verbs.add_parser("list", help="the indexed documents, one JSON line each")
    search = verbs.add_parser("search", help="the best passages for a query, JSON lines")
    search.add_argument("query")
    search.add_argument("--k", type=int, default=5, help="how many passages (default 5)")
    search.add_argument("--words-only", action="store_true", help="BM25 alone, no embeddings")
    verbs.add_parser("refresh", help="read changed files again, forget those that are gone")
    remove = verbs.add_parser("remove", help="forget a document")
    remove.add_argument("path", type=Path)


def _added(index: DocumentIndex, paths: list[Path]) -> list[Added]:
    out: list[Added] = []
    for path in paths:
        out += index.add_folder(path) if path.is_dir() else [index.add(path)]
    return out


def _removed(added: list[Added]) -> None:
    """How many files indexed through a link leading out were removed, when any were."""
    removed = sum(a.removed for a in added)
    if removed:
        print(removed_count(removed), file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    index = DocumentIndex()
    try:
        if args.verb == "add":
            missing = [str(p) for p in args.paths if not p.exists()]
            if missing:
                raise InvalidInputError(f"no such file or folder: {', '.join(missing)}")
            done = _added(index, args.paths)
            for added in done:
                said = "unchanged" if added.unchanged else f"{added.chunks} chunks"
                notice = f" — {added.notice}" if added.notice else ""
                print(f"{added.path}: {said}{notice}", file=sys.stderr)
            _removed(done)
        elif args.verb == "list":
            for document in index.documents():
                print(json.dumps(document, ensure_ascii=False))
        elif args.verb == "search":
            _removed(index.refresh()[0])
            for hit in index.search(args.query, max(1, args.k), hybrid=not args.words_only):
                where = {"page": hit.page} if hit.page is not None else {"lines": list(hit.lines)}
                row = {"file": hit.file, **where, "text": hit.text, "score": hit.score}
                print(json.dumps(row, ensure_ascii=False))
        elif args.verb == "refresh":
            kept, gone = index.refresh()
            for added in kept:
                said = "unchanged" if added.unchanged else f"read again, {added.chunks} chunks"
                print(f"{added.path}: {added.notice if added.removed else said}", file=sys.stderr)
            for name in gone:
                print(f"{name}: gone, forgotten", file=sys.stderr)
            _removed(kept)
        else:
            had = index.remove(args.path)
            print(f"{args.path}: {'removed' if had else 'was not indexed'}", file=sys.stderr)
    finally:
        index.close()
    return 0


__all__ = ["add_arguments", "run"]
