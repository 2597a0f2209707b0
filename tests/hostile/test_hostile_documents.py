"""Hostile documents from the adversarial review (D5–D7, D11, D15, D17/F3), each built here:
a PDF whose content stream is a FlateDecode bomb, a PDF page of 400k operators, a DOCX zip
bomb of about 2 MB expanding to 2 GiB (deflate's limit, ~1 MB per GiB) (and one whose entry lies about its size), text that
turns binary after its first 8 KB. Each becomes a notice for that file only — refused in
under 2 s and 200 MB over the idle process, measured in a child process — and a library
folder holding all of them still indexes its other files, then searches and chats.
Then the files the app makes: a documents / chat / history run in a fresh HOME under umask
022 leaves every file in the config, data and cache folders 0600 and every folder 0700."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.documents.extract import extract
from tests.pdf_fixture import make_pdf, pdf_of_streams

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
GOOD_PAGE = b"BT /F1 11 Tf 72 740 Td (Drain the tank before the first frost.) Tj ET"


def _deflate_runs(head: bytes, fill: bytes, count: int, tail: bytes) -> tuple[bytes, int, int, int]:
    """Raw deflate of head + fill * count + tail, made in milliseconds: each part is compressed
    after a full flush, so one compressed block of `fill` repeats as is.
    (deflated, size, crc32, adler32)"""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = comp.compress(head) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(fill) + comp.flush(zlib.Z_FULL_FLUSH)
    last = comp.compress(tail) + comp.flush(zlib.Z_FINISH)
    crc, adler = zlib.crc32(head), zlib.adler32(head)
    for _ in range(count):
        crc, adler = zlib.crc32(fill, crc), zlib.adler32(fill, adler)
    crc, adler = zlib.crc32(tail, crc), zlib.adler32(tail, adler)
    return first + block * count + last, len(head) + len(fill) * count + len(tail), crc, adler


def flate_bomb_pdf(path: Path, gib: int = 1) -> Path:
    """Page 1: a FlateDecode stream of ~1 MB that expands to `gib` GiB; page 2: real text."""
    raw, _, _, adler = _deflate_runs(b"BT ", b" " * MIB, gib * 1024, b" ET")
    stream = b"\x78\xda" + raw + struct.pack(">I", adler)
    return pdf_of_streams(path, [(stream, b"/Filter /FlateDecode "), (GOOD_PAGE, b"")])


def operators_pdf(path: Path, count: int = 400_000) -> Path:
    """Page 1: `count` text-showing operators; page 2: real text."""
    return pdf_of_streams(path, [(b"BT /F1 11 Tf 72 740 Td " + b"(a) Tj " * count + b"ET", b""), (GOOD_PAGE, b"")])


def _zip(path: Path, entries: list[tuple[str, bytes, int, int, int]]) -> Path:
    """A ZIP written by hand: (name, data, declared size, crc32, method) per entry — so a test can
    declare any size (zipfile would compute it)."""
    out, central = bytearray(), bytearray()
    for name, data, size, crc, method in entries:
        local = len(out)
        fields = struct.pack("<HHHHHIII", 20, 0, method, 0, 0x21, crc, len(data), size)
        out += b"PK\x03\x04" + fields + struct.pack("<HH", len(name), 0) + name.encode() + data
        central += (b"PK\x01\x02" + struct.pack("<H", 20) + fields
                    + struct.pack("<HHHHHII", len(name), 0, 0, 0, 0, 0, local) + name.encode())
    end = struct.pack("<HHHHIIH", 0, 0, len(entries), len(entries), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + b"PK\x05\x06" + end))
    return path


def docx_bomb(path: Path, gib: int = 2, declared: int | None = None) -> Path:
    """A real DOCX whose word/document.xml is padded to `gib` GiB of spaces inside its body (about
    1 MB compressed per GiB, deflate's limit); `declared` replaces the size the archive declares."""
    import io

    import docx

    made = io.BytesIO()
    word = docx.Document()
    word.add_paragraph("A harmless looking report.")
    word.save(made)
    entries = []
    with zipfile.ZipFile(made) as source:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                head, _, tail = data.rpartition(b"</w:body>")
                raw, size, crc, _ = _deflate_runs(head, b" " * 16 * MIB, gib * 64 - 1, b"</w:body>" + tail)
                entries.append((info.filename, raw, size if declared is None else declared, crc, 8))
            else:
                comp = zlib.compressobj(9, zlib.DEFLATED, -15)
                entries.append((info.filename, comp.compress(data) + comp.flush(), len(data), zlib.crc32(data), 8))
    return _zip(path, entries)


def binary_after_8k(path: Path, nul: bool) -> Path:
    text = "".join(f"line {i}: a perfectly ordinary sentence.\n" for i in range(400)).encode()
    assert len(text) > 8192
    path.write_bytes(text + (b"\x00\x01\x02" if nul else b"\xff\xfe\xc0\x80 binary \x89PNG") + text)
    return path


MEASURE = """
import json, resource, sys, time
from pathlib import Path
import docx, pypdf
from app.documents.extract import extract
idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
got = extract(Path(sys.argv[1]))
took = time.perf_counter() - start
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - idle) / 1024
print(json.dumps({"seconds": took, "grown_mb": grown, "notice": got.notice, "text": got.text}))
"""


def measured(path: Path) -> dict[str, Any]:
    """extract(path) in a fresh process: its time, peak memory over the idle process, result."""
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def quick_and_small(result: dict[str, Any]) -> None:
    assert result["seconds"] < 2.0, result["seconds"]
    assert result["grown_mb"] < 200, result["grown_mb"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    flate_bomb_pdf(folder / "bomb.pdf")
    operators_pdf(folder / "operators.pdf")
    docx_bomb(folder / "bomb.docx")
    binary_after_8k(folder / "late-nul.txt", nul=True)
    binary_after_8k(folder / "late-binary.md", nul=False)
    (folder / "kiln.md").write_text("The kiln must cool for a day before the frost.\n")
    return folder


def test_d5_a_flate_bomb_stream_is_one_page_notice_and_the_other_pages_are_read(hostile: Path) -> None:
    assert (hostile / "bomb.pdf").stat().st_size < 2 * MIB
    result = measured(hostile / "bomb.pdf")
    quick_and_small(result)
    assert "page 1 could not be read" in result["notice"]
    assert "Drain the tank before the first frost." in result["text"]


def test_d6_a_page_of_400k_operators_is_refused_before_it_is_parsed(hostile: Path) -> None:
    result = measured(hostile / "operators.pdf")
    quick_and_small(result)
    assert result["notice"] == "page 1 not read: it has over 100,000 operators"
    assert result["text"] == "Drain the tank before the first frost."


def test_a_pdf_of_ordinary_pages_is_read_whole(tmp_path: Path) -> None:
    busy = operators_pdf(tmp_path / "busy.pdf", count=20_000)  # many operators, under the limit
    got = extract(busy)
    assert got.notice is None and got.text.count("a") >= 20_000
    plain = extract(make_pdf(tmp_path / "plain.pdf", [["Chapter one."], ["Chapter two."]]))
    assert plain.notice is None and [p.text.strip() for p in plain.pages] == ["Chapter one.", "Chapter two."]


def test_d11_a_docx_zip_bomb_is_refused_from_its_directory(hostile: Path) -> None:
    bomb = hostile / "bomb.docx"
    assert bomb.stat().st_size < 3 * MIB
    with zipfile.ZipFile(bomb) as archive:  # what it would expand to: GiBs
        assert archive.getinfo("word/document.xml").file_size >= 2 * 1024 * MIB - 16 * MIB
    result = measured(bomb)
    quick_and_small(result)
    assert result["notice"].startswith("the Word file was not read: it would expand to ")
    assert result["text"] == ""


def test_a_docx_entry_that_lies_about_its_size_is_stopped_while_streaming(tmp_path: Path) -> None:
    liar = docx_bomb(tmp_path / "liar.docx", gib=1, declared=4096)
    result = measured(liar)
    quick_and_small(result)
    assert result["notice"].startswith("the Word file was not read: ")
    import docx

    word = docx.Document()
    word.add_paragraph("Quarterly fruit report.")
    word.save(str(tmp_path / "fine.docx"))
    assert extract(tmp_path / "fine.docx").text == "Quarterly fruit report."


@pytest.mark.parametrize("name", ["late-nul.txt", "late-binary.md"])
def test_d15_binary_after_the_first_8_kb_is_found(hostile: Path, name: str) -> None:
    result = measured(hostile / name)
    quick_and_small(result)
    assert result["notice"] == "this is a binary file, not text" and result["text"] == ""


def test_text_whose_character_straddles_8_kb_stays_text(tmp_path: Path) -> None:
    text = "a" * 8191 + "é and more" + "\nthe end\n"
    (tmp_path / "accent.txt").write_text(text, encoding="utf-8")
    got = extract(tmp_path / "accent.txt")
    assert got.notice is None and got.text == text


def _cli(env: dict[str, str], *args: str, umask: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "app", *args]
    if umask:
        command = ["sh", "-c", 'umask 022 && exec "$0" "$@"', *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def test_d7_a_library_folder_with_bombs_indexes_the_rest_and_chat_library_still_works(
    hostile: Path, tmp_path: Path, tiny_model: Any
) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data")}
    added = _cli(env, "documents", "add", str(hostile))
    assert added.returncode == 0, added.stderr[-3000:]
    said = {Path(line.split(":")[0]).name: line for line in added.stderr.splitlines() if ": " in line}
    assert said["kiln.md"].endswith(": 1 chunks")
    for name in ("bomb.pdf", "operators.pdf", "bomb.docx", "late-nul.txt", "late-binary.md"):
        assert " — " in said[name], said
    assert "1 chunks" in said["operators.pdf"] and "1 chunks" in said["bomb.pdf"]  # their good page
    listed = [json.loads(line) for line in _cli(env, "documents", "list").stdout.splitlines()]
    assert len(listed) == 6 and all(d["notice"] for d in listed if not d["path"].endswith("kiln.md"))
    found = _cli(env, "documents", "search", "kiln cool")
    assert found.returncode == 0 and json.loads(found.stdout.splitlines()[0])["file"].endswith("kiln.md")
    chat = _cli(env, "chat", "--model", str(tiny_model), "--ctx", "1024", "--threads", "1", "--max-tokens", "4",
                "--seed", "1", "--library", "--prompt", "When does the kiln cool?")
    assert chat.returncode in (0, 1), chat.stderr[-3000:]  # the random model may not answer; the turn ran
    assert "unexpected error" not in chat.stderr
    assert any(line.startswith("[attached] library: ") for line in chat.stderr.splitlines()), chat.stderr


def _everything(roots: list[Path]) -> Iterator[Path]:
    for root in roots:
        if root.exists():
            yield root
            yield from root.rglob("*")


def test_f3_every_file_the_app_makes_is_0600_in_a_0700_folder(tmp_path: Path, tiny_model: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARMONY_DESK_", "XDG_"))}
    env["HOME"] = str(home)
    env["HARMONY_DESK_LOG_LEVEL"] = "DEBUG"  # a normal run logs nothing: make the log file be written
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    make_pdf(shelf / "manual.pdf", [["Drain the tank before the first frost."]])
    note = tmp_path / "note.txt"
    note.write_text("Remember the frost.\n")
    assert _cli(env, "documents", "add", str(shelf), umask=True).returncode == 0
    assert _cli(env, "documents", "search", "frost", umask=True).returncode == 0
    chat = _cli(env, "chat", "--model", str(tiny_model), "--ctx", "1024", "--threads", "1", "--max-tokens", "4",
                "--seed", "1", "--save", "--library", "--attach", str(note), "--prompt", "Frost?", umask=True)
    assert chat.returncode in (0, 1), chat.stderr[-3000:]
    listed = _cli(env, "history", "list", umask=True)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert _cli(env, "models", "list", umask=True).returncode == 0  # writes the library's cache
    roots = [home / ".config" / "harmony-desk", home / ".local" / "share" / "harmony-desk",
             home / ".cache" / "harmony-desk"]
    made = list(_everything(roots))
    names = {p.name for p in made}
    expected = {"documents.sqlite3", "history.db", "kept.sqlite3", "harmony-desk.log", "models.json", "library-scan.json"}
    assert expected <= names, sorted(names)
    wrong = [(str(p.relative_to(home)), oct(stat.S_IMODE(p.stat().st_mode))) for p in made
             if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
    assert not wrong, wrong


def test_sqlite_companions_are_0600_while_the_databases_are_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.documents.index import DocumentIndex
    from app.documents.kept import KeptFiles
    from app.store.database import open_database

    data = tmp_path / "deep" / "data"
    monkeypatch.setenv("HARMONY_DESK_DATA", str(data))
    note = tmp_path / "note.md"
    note.write_text("The kiln must cool for a day.\n")
    old = os.umask(0o022)
    try:
        index, kept, history = DocumentIndex(), KeptFiles(), open_database().connection
        index.add(note)
        kept.keep(note, "conversation", "version")
        history.execute("CREATE TABLE probe (x)")
        made = list(_everything([tmp_path / "deep"]))
        names = {p.name for p in made}
        assert "kept.sqlite3" in names  # a rollback journal, gone after each commit
        for db in ("documents.sqlite3", "history.db"):  # WAL: the companions stay while open
            assert {db, db + "-wal", db + "-shm"} <= names, sorted(names)
        wrong = [(str(p), oct(stat.S_IMODE(p.stat().st_mode))) for p in made
                 if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
        assert not wrong, wrong
    finally:
        os.umask(old)
        index.close()
        kept.close()
        history.close()
