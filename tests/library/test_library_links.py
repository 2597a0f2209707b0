"""A library reads only what lies inside the folder the user added, with real folders holding
real links. From the security review: a documents folder holding a link to `/etc/passwd`
indexed it, and `chat --library` sent it to a remote endpoint.

The documents library indexes no file whose real path lies outside the folder (a link to
`/etc/passwd`, a linked folder leading elsewhere) and says what it skipped; the models library
follows a link out only to a GGUF model (a model linked into the folder, as people do), and
lists anything else it skipped with a sentence, reading nothing of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.documents.index import SKIPPED, DocumentIndex, files_in, walk
from app.library.scan import ScanCache, listing, scan

ROOT = Path(__file__).resolve().parents[2]
SECRET = Path("/etc/passwd")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder the user never added, holding a note."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "private.md").write_text("The vault code is 4711.\n")
    return folder


@pytest.fixture
def shelf(tmp_path: Path, outside: Path) -> Path:
    """The folder the user adds: a note of its own, a link to another of its own, a link to
    `/etc/passwd`, a link to a note outside, and a linked folder leading outside."""
    folder = tmp_path / "shelf"
    (folder / "inner").mkdir(parents=True)
    (folder / "notes.md").write_text("Remember the frost on the kiln.\n")
    (folder / "inner" / "again.md").symlink_to(folder / "notes.md")  # inside: the same file
    (folder / "passwd.txt").symlink_to(SECRET)
    (folder / "inner" / "borrowed.md").symlink_to(outside / "private.md")
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)
    return folder


def test_a_folder_walk_keeps_only_what_lies_inside(shelf: Path, outside: Path) -> None:
    walked = walk(shelf)
    assert walked.files == sorted([shelf / "inner" / "again.md", shelf / "notes.md"])
    skipped = dict(walked.skipped)
    assert set(skipped) == {
        shelf / "passwd.txt",
        shelf / "inner" / "borrowed.md",
        shelf / "elsewhere",
    }
    assert (
        str(SECRET) in skipped[shelf / "passwd.txt"]
        and "not indexed" in skipped[shelf / "passwd.txt"]
    )
    assert "not looked in" in skipped[shelf / "elsewhere"]
    assert files_in([shelf]) == walked.files
    assert files_in([shelf / "passwd.txt"]) == [shelf / "passwd.txt"]  # a file named by the user


def test_the_documents_library_never_indexes_a_link_leading_out(shelf: Path, outside: Path) -> None:
    index = DocumentIndex(memory=True)
    try:
        added = index.add_folder(shelf)
        indexed = {str(d["path"]) for d in index.documents()}
        assert indexed == {str((shelf / "notes.md").resolve())}
        said = {a.path: a.notice for a in added if a.kind == SKIPPED}
        assert set(said) == {
            str(shelf / "passwd.txt"),
            str(shelf / "inner" / "borrowed.md"),
            str(shelf / "elsewhere"),
        }
        assert all(a.chunks == 0 for a in added if a.kind == SKIPPED)
        hits = index.search("root vault code 4711 bin bash")  # nothing of them is searchable
        assert {h.file for h in hits} <= indexed and not any("4711" in h.text for h in hits)
        (shelf / "later.md").symlink_to(outside / "private.md")  # a link that appears later
        kept, gone = index.refresh()
        assert {a.path for a in kept} == indexed and gone == []
    finally:
        index.close()


def test_documents_add_says_what_it_skipped(tmp_path: Path, shelf: Path) -> None:
    env = {
        **os.environ,
        "HARMONY_DESK_DATA": str(tmp_path / "data"),
        "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
    }
    done = subprocess.run([sys.executable, "-m", "app", "documents", "add", str(shelf)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{shelf / 'passwd.txt'}: 0 chunks — a link to {SECRET}, outside" in done.stderr
    listed = subprocess.run([sys.executable, "-m", "app", "documents", "list"], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=300)  # fmt: skip
    assert (
        "passwd" not in listed.stdout
        and "private.md" not in listed.stdout
        and "notes.md" in listed.stdout
    )


def test_the_models_library_follows_a_link_out_only_to_a_model(
    tmp_path: Path, tiny_model: Any
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "hidden.gguf").symlink_to(tiny_model)
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf").symlink_to(tiny_model)  # a model linked in: listed, as ever
    (models / "passwd.gguf").symlink_to(SECRET)
    (models / "other").symlink_to(elsewhere, target_is_directory=True)
    os.mkfifo(tmp_path / "pipe")
    (models / "pipe.gguf").symlink_to(tmp_path / "pipe")  # never opened: it would wait
    cache = ScanCache(tmp_path / "scan.json")
    entries = {e.name: e for e in scan([models], cache=cache)}
    assert set(entries) == {"tiny", "passwd", "other", "pipe"}
    assert entries["tiny"].usable and entries["tiny"].architecture == "gpt-oss"
    passwd = entries["passwd"]
    assert not passwd.usable and not passwd.architecture and passwd.file_size == 0
    assert f"a link to {SECRET}, outside {models}, and not a model" in passwd.problem
    assert "not looked in" in entries["other"].problem and "hidden" not in entries
    assert "not a model" in entries["pipe"].problem
    found = {f.entry.name: f for f in listing([models], cache=cache)}
    assert set(found) == set(entries) and found["passwd"].entry.problem == passwd.problem


def test_the_windows_summary_says_the_links_it_skipped_apart_from_the_documents() -> None:
    from app.controllers.library_files import summary
    from app.documents.index import SKIPPED, Added

    said, notes = summary([Added("/lib/a.txt", "text", 3, ""), Added("/lib/passwd", SKIPPED, 0, "a link to /etc/passwd")])
    assert said.startswith("1 document in the library (1 read now, 3 passages)")
    assert "1 link leads out of the folder: not read." in said and "/lib/passwd: a link to /etc/passwd" in notes


def _stale(shelf: Path, db: Path) -> DocumentIndex:
    """The index an older version left: `shelf` added, and the note outside that the link
    `inner/borrowed.md` leads to indexed as one of the folder's files (that version's walk
    followed links), in a real SQLite file."""
    index = DocumentIndex(db)
    index.add_folder(shelf)
    index.add(shelf / "inner" / "borrowed.md", folder=shelf.resolve())
    return index


def test_a_file_indexed_through_a_link_leading_out_is_never_retrieved_and_a_rescan_removes_it(
    tmp_path: Path, shelf: Path, outside: Path
) -> None:
    from app.controllers.library_files import summary

    db = tmp_path / "data" / "documents.sqlite3"
    private = str((outside / "private.md").resolve())
    index = _stale(shelf, db)
    try:
        assert private in {d["path"] for d in index.documents()}  # the stale entry is there
        hits = index.search("vault code 4711", k=8)
        assert private not in {h.file for h in hits} and not any("4711" in h.text for h in hits)
        assert index.search("vault code 4711", k=8, hybrid=False) == []  # its words only: none
    finally:
        index.close()
    index = DocumentIndex(db)  # the next start: the folder scanned again
    try:
        added = index.add_folder(shelf)
        removed = [a for a in added if a.removed]
        assert [a.path for a in removed] == [str(shelf / "inner" / "borrowed.md")]
        assert removed[0].kind == SKIPPED and removed[0].notice == (
            f"a link to {private}, outside {shelf.resolve()}: not indexed, and removed from the library"
        )
        assert sum(a.path == removed[0].path for a in added) == 1  # said once, as removed
        assert private not in {d["path"] for d in index.documents()}
        orphans = index.db.execute("SELECT count(*) FROM chunks WHERE document NOT IN (SELECT id FROM documents)")
        assert orphans.fetchone()[0] == 0  # its chunks and their embeddings went with it
        fts = index.db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH '4711'")
        assert fts.fetchone()[0] == 0
        said, notes = summary(added)
        assert "1 file removed from the library: reached through a link leading out" in said
        assert f"{removed[0].path}: {removed[0].notice}" in notes
        kept, gone = index.refresh()
        assert not any(a.removed for a in kept) and gone == []  # nothing left to remove
    finally:
        index.close()


def test_a_folder_inside_that_became_a_link_leading_out_is_withheld_then_removed(
    tmp_path: Path, outside: Path
) -> None:
    shelf = tmp_path / "shelf"
    (shelf / "sub").mkdir(parents=True)
    (shelf / "sub" / "plan.md").write_text("The garden plan: tulips by the wall.\n")
    (outside / "plan.md").write_text("The vault code is 4711, said the plan.\n")
    index = DocumentIndex(tmp_path / "documents.sqlite3")
    try:
        index.add_folder(shelf)
        assert [h.file for h in index.search("tulips garden plan", k=1)] == [str(shelf.resolve() / "sub" / "plan.md")]
        (shelf / "sub" / "plan.md").unlink()
        (shelf / "sub").rmdir()
        (shelf / "sub").symlink_to(outside, target_is_directory=True)  # the same path now leads out
        assert index.search("tulips garden plan", k=5) == []  # before any rescan: withheld
        kept, gone = index.refresh()
        assert [a.path for a in kept if a.removed] == [str(shelf.resolve() / "sub" / "plan.md")]
        assert index.documents() == [] and gone == []  # and what it leads to is never read
        assert not any("4711" in h.text for h in index.search("vault code 4711 plan", k=5))
    finally:
        index.close()


def test_an_index_from_before_origins_were_recorded_learns_them_and_says_what_it_removed(
    tmp_path: Path, shelf: Path, outside: Path
) -> None:
    from app.documents.attach import attach

    data = tmp_path / "data"
    loose = tmp_path / "loose.md"
    loose.write_text("A loose note on the lantern oil.\n")
    index = _stale(shelf, data / "documents.sqlite3")
    index.add(loose)  # a file named on its own: no folder holds it, and none ever will
    index.db.execute("ALTER TABLE documents DROP COLUMN source")  # as that version wrote it
    index.db.execute("ALTER TABLE documents DROP COLUMN via")
    index.close()
    index = DocumentIndex(data / "documents.sqlite3")
    try:
        hits = index.search("vault code 4711", k=8)
        assert not any("4711" in h.text for h in hits)  # held to the folder whose link reached it
        assert [h.file for h in index.search("lantern oil", k=1)] == [str(loose.resolve())]
        attached = attach([], "vault code 4711 frost kiln", 4000, lambda text: len(text) // 4 + 1, index)
        assert "4711" not in attached.context and "frost on the kiln" in attached.context
        assert attached.files[-1].note().endswith(
            "(1 file removed from the library: reached through a link leading out of its folder)"
        )
        assert str((outside / "private.md").resolve()) not in {d["path"] for d in index.documents()}
        assert str(loose.resolve()) in {d["path"] for d in index.documents()}
    finally:
        index.close()


def test_documents_refresh_says_what_it_removed_and_why(tmp_path: Path, shelf: Path, outside: Path) -> None:
    _stale(shelf, tmp_path / "data" / "documents.sqlite3").close()
    env = {
        **os.environ,
        "HARMONY_DESK_DATA": str(tmp_path / "data"),
        "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
    }
    done = subprocess.run([sys.executable, "-m", "app", "documents", "refresh"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    link, private = shelf / "inner" / "borrowed.md", (outside / "private.md").resolve()
    assert f"{link}: a link to {private}, outside {shelf.resolve()}: not indexed, and removed" in done.stderr
    assert "1 file removed from the library: reached through a link leading out of its folder" in done.stderr
