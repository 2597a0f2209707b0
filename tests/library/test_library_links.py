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
