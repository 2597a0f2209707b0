"""The documents a conversation keeps and the library it may use, across restarts and machines:
a library folder that picks up new, changed and removed files by itself; exports that carry the
attached files (or their references) and imports that restore them, refusing content that does
not match; `chat --save --attach --library` on the tiny gpt-oss; the window's Library switch,
saved with the conversation, and the 📎 Files menu opening a kept copy."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.documents.index import DocumentIndex
from app.documents.kept import KeptFiles
from app.domain.history import ChatDoc, Reply, Turn, Version
from app.store.history import HistoryStore
from tests.pdf_fixture import make_pdf

ROOT = Path(__file__).resolve().parents[2]


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HARMONY_DESK_DATA": str(data)},
        cwd=ROOT,
        timeout=300,
    )


def test_a_library_folder_picks_up_new_changed_and_removed_files(tmp_path: Path) -> None:
    shelf = tmp_path / "shelf"
    (shelf / "deep").mkdir(parents=True)
    (shelf / "pump.md").write_text("The pump wants oil every spring.\n")
    (shelf / "deep" / "ferry.txt").write_text("The ferry leaves at noon.\n")
    index = DocumentIndex(tmp_path / "index.sqlite3")
    assert [Path(a.path).name for a in index.add_folder(shelf)] == ["ferry.txt", "pump.md"]
    assert index.folders() == [str(shelf.resolve())]
    (shelf / "deep" / "kiln.md").write_text("The kiln reaches 1200 degrees.\n")  # new
    (shelf / "pump.md").write_text("The pump wants grease every autumn.\n")  # changed
    (shelf / "deep" / "ferry.txt").unlink()  # gone
    done, gone = index.refresh()
    by_name = {Path(a.path).name: a for a in done}
    assert set(by_name) == {"kiln.md", "pump.md"} and not any(a.unchanged for a in done)
    assert [Path(g).name for g in gone] == ["ferry.txt"]
    assert index.search("kiln degrees", k=1)[0].file.endswith("kiln.md")
    assert "grease" in index.search("pump", k=1)[0].text
    assert not index.search("ferry noon")
    os.utime(shelf / "pump.md", (1, 1))  # touched, not changed: compared, found the same
    again, _ = index.refresh()
    assert all(a.unchanged for a in again)
    index.close()
    reopened = DocumentIndex(tmp_path / "index.sqlite3")  # the folder is remembered
    (shelf / "later.md").write_text("Added after a restart: the lighthouse is white.\n")
    reopened.refresh()
    assert reopened.search("lighthouse", k=1)[0].file.endswith("later.md")
    assert reopened.remove(shelf) and reopened.documents() == [] and reopened.folders() == []
    reopened.close()


def _conversation_with_files(data: Path, files: list[Path]) -> ChatDoc:
    """A saved two-turn conversation whose second message carried `files` (kept in `data`)."""
    doc = ChatDoc(title="Pump questions")
    for text in ("Hello.", "What does the manual say?"):
        reply = Reply(state="done")
        doc.turns.append(Turn([Version(text, replies=[reply])]))
    store = HistoryStore(data / "history.db")
    store.save(doc)
    store.close()
    kept = KeptFiles(data / "attachments")
    for path in files:
        kept.keep(path, doc.id, doc.turns[1].version.id)
    kept.close()
    return doc


def _kept_in(data: Path, conversation: str) -> list[tuple[str, bytes]]:
    store = HistoryStore(data / "history.db")
    doc = store.load(conversation)
    store.close()
    assert doc is not None
    kept = KeptFiles(data / "attachments")
    try:
        return [
            (name, path.read_bytes())
            for turn in doc.turns
            for name, path in kept.files_of(turn.version.id)
        ]
    finally:
        kept.close()


@pytest.mark.parametrize("fmt", ["ocm", "json"])
def test_exports_carry_attached_files_and_imports_restore_them(tmp_path: Path, fmt: str) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    manual = tmp_path / "manual.pdf"
    make_pdf(manual, [["Unscrew the blue valve first."], ["Drain the tank before frost."]])
    notes = tmp_path / "notes.md"
    notes.write_bytes(b"# Notes\nthe <|start|> token stays text\n")
    doc = _conversation_with_files(here, [manual, notes])
    exported = tmp_path / f"out.{fmt}"
    assert _cli(here, "history", "export", "--format", fmt, doc.id, str(exported)).returncode == 0
    imported = _cli(there, "history", "import", str(exported))  # another machine's data folder
    assert imported.returncode == 0 and "not restored" not in imported.stderr, imported.stderr
    new_id = imported.stdout.split()[0]
    assert _kept_in(there, new_id) == [
        ("manual.pdf", manual.read_bytes()),
        ("notes.md", notes.read_bytes()),
    ]
    assert len([p for p in (there / "attachments").iterdir() if len(p.name) == 64]) == 2

    references = tmp_path / f"refs.{fmt}"
    _cli(here, "history", "export", "--no-files", "--format", fmt, doc.id, str(references))
    assert base64.b64encode(manual.read_bytes()).decode() not in references.read_text()
    elsewhere = _cli(tmp_path / "elsewhere", "history", "import", str(references))
    assert elsewhere.returncode == 0 and elsewhere.stdout.strip()  # the chat is imported anyway
    assert (
        "attachment not restored: manual.pdf: the export carried only its reference, and it is"
        " not kept here" in elsewhere.stderr
    )
    same_machine = _cli(there, "history", "import", str(references))  # the content is kept here
    assert same_machine.returncode == 0 and "not restored" not in same_machine.stderr
    assert [n for n, _ in _kept_in(there, same_machine.stdout.split()[0])] == [
        "manual.pdf",
        "notes.md",
    ]


def test_an_import_never_keeps_content_that_does_not_match_its_digest(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    notes = tmp_path / "notes.md"
    notes.write_text("genuine notes\n")
    doc = _conversation_with_files(here, [notes])
    exported = tmp_path / "out.json"
    _cli(here, "history", "export", "--format", "json", doc.id, str(exported))
    data = json.loads(exported.read_text())
    carried = data["header"]["harmony_desk"]["attachments"]
    assert [(a["turn"], a["name"], a["size"]) for a in carried] == [(1, "notes.md", 14)]
    carried[0]["data"] = base64.b64encode(b"forged content\n").decode()
    carried.append({"turn": 7, "name": "../../escape.txt", "sha256": "0" * 64, "data": ""})
    carried.append("not an object")
    exported.write_text(json.dumps(data))
    imported = _cli(there, "history", "import", str(exported))
    assert imported.returncode == 0 and imported.stdout.strip(), imported.stderr
    assert "notes.md: its content does not match its sha256" in imported.stderr
    assert "escape.txt: turn 7 is not in the conversation" in imported.stderr
    assert "an attachment entry that is not an object" in imported.stderr
    assert _kept_in(there, imported.stdout.split()[0]) == []
    stored = there / "attachments"
    assert not stored.exists() or not [p for p in stored.iterdir() if len(p.name) == 64]


def test_chat_save_with_the_library_keeps_files_and_cites_library_passages(
    tmp_path: Path, tiny_model: Any
) -> None:
    data = tmp_path / "data"
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    make_pdf(shelf / "manual.pdf", [["Chapter one."], ["Drain the tank before the first frost."]])
    assert _cli(data, "documents", "add", str(shelf)).returncode == 0
    (shelf / "kiln.md").write_text("The kiln must cool for a day before the frost.\n")  # found
    note = tmp_path / "note.txt"
    note.write_text("Remember the frost.\n")
    done = _cli(
        data,
        "chat",
        "--model",
        str(tiny_model),
        "--ctx",
        "1024",
        "--threads",
        "1",
        "--max-tokens",
        "16",
        "--seed",
        "1",
        "--save",
        "--library",
        "--attach",
        str(note),
        "--prompt",
        "What to do before the frost?",
    )
    assert done.returncode in (0, 1), done.stderr  # the random model may not answer
    said = [line for line in done.stderr.splitlines() if line.startswith("[attached]")]
    assert said[0].startswith("[attached] note.txt: whole file, ")
    assert said[1] in (
        "[attached] library: 2 passages from 2 documents",
        "[attached] library: 3 passages from 2 documents",
    )
    saved = done.stderr.split("[saved as ")[1].split(":")[0]
    assert _kept_in(data, saved) == [("note.txt", b"Remember the frost.\n")]
    store = HistoryStore(data / "history.db")
    doc = store.load(saved)
    store.close()
    assert doc is not None
    sent = doc.turns[0].version.user_text
    assert "[1] manual.pdf, page 2:\nDrain the tank" in sent or "[1] kiln.md, lines" in sent
    assert "[2] " in sent and sent.endswith("What to do before the frost?")


@pytest.mark.qt_log_ignore("This plugin does not support")  # the offscreen platform and popups
def test_the_window_library_switch_is_saved_and_the_files_menu_opens_a_kept_copy(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWidgets import QMenu

    from tests.ui.test_window import make_window, send

    data = tmp_path / "data"
    monkeypatch.setenv("HARMONY_DESK_DATA", str(data))
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    (shelf / "ferry.md").write_text("The ferry to the island leaves at noon.\n")
    index = DocumentIndex()
    index.add_folder(shelf)
    index.close()
    answer = "<|channel|>final<|message|>At noon [1].<|return|>"
    window, client = make_window(qtbot, tmp_path, [answer, answer], store=HistoryStore())
    controller = window.controller
    said: list[str] = []
    controller.notice.connect(said.append)
    window.composer.library.setChecked(True)
    send(qtbot, window, "When does the ferry leave?")
    qtbot.waitUntil(window.sending.done, timeout=10_000)
    assert said[-1] == "Attached: library: 1 passage from 1 document"
    prompt = client.encoding.decode(client.prompts[-1])
    assert "[1] ferry.md, lines 1–1:\nThe ferry to the island leaves at noon." in prompt
    offered = window.transcript.turns[-1]._offer_files()  # library passages: no file kept
    assert [a.isEnabled() for a in offered.actions()] == [False]
    offered.close()
    controller.settle()  # saving happens off the GUI thread
    store = HistoryStore()
    saved = store.load(controller.doc.id)
    store.close()
    assert saved is not None and saved.library

    letter = tmp_path / "letter.md"
    letter.write_text("Dear ferry company,\n")
    window.composer.add_files([letter])
    send(qtbot, window, "Shorten my letter.")
    qtbot.waitUntil(window.sending.done, timeout=10_000)
    shutil.move(letter, tmp_path / "moved.md")  # the original goes; the kept copy stays
    opened: list[Path] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(Path(url.path())))
    turn = window.transcript.turns[-1]
    assert turn.files_button.isVisible()
    menu: QMenu = turn._offer_files()
    assert [a.text() for a in menu.actions()] == ["letter.md"]
    menu.actions()[0].trigger()
    menu.close()
    assert opened[0].name == "letter.md" and opened[0].read_text() == "Dear ferry company,\n"
    digest = hashlib.sha256(b"Dear ferry company,\n").hexdigest()
    assert opened[0].parent.name == digest and opened[0] != data / "attachments" / digest
    controller.new_chat()
    qtbot.waitUntil(lambda: not window.composer.library.isChecked(), timeout=5000)


def test_pasting_a_file_or_its_path_attaches_it_and_other_text_is_typed(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    from PySide6.QtCore import QMimeData, QUrl

    from tests.ui.test_window import make_window

    window, _ = make_window(qtbot, tmp_path, [])
    composer = window.composer
    report, notes = tmp_path / "report.md", tmp_path / "notes.txt"
    report.write_text("# Report\n")
    notes.write_text("notes\n")
    copied = QMimeData()  # what a file manager puts on the clipboard
    copied.setUrls([QUrl.fromLocalFile(str(report))])
    copied.setText(str(report))
    composer.box.insertFromMimeData(copied)
    path_only = QMimeData()
    path_only.setText(f"  file://{notes}\n")
    composer.box.insertFromMimeData(path_only)
    assert composer.files == [report, notes] and composer.box.toPlainText() == ""
    for text in (f"see {notes}", str(tmp_path / "missing.md"), "relative/notes.txt", str(tmp_path)):
        typed = QMimeData()
        typed.setText(text)
        composer.box.insertFromMimeData(typed)
        assert composer.box.toPlainText() == text and composer.files == [report, notes]
        composer.box.clear()
