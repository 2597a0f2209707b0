"""A user message's images in the history, its exports and imports: the store keeps what identifies
each image (reopened exactly, in order), the kept files keep the bytes, exports carry both and an
import restores both (sha256 checked); what cannot come back is said. Real SQLite files, real kept
folders, real PNGs."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.documents.carry import carried, restore
from app.documents.kept import KeptFiles
from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.messages import IMAGE_MARKER, ImageContent, Message, Role
from app.errors import TranscriptError
from app.images.decode import Picture, read
from app.store.database import MIGRATIONS
from app.store.exchange import export, import_carrying
from app.store.history import HistoryStore
from app.store.importers import import_any


def png(seed: int, size: tuple[int, int] = (24, 16), name: str = "") -> Picture:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return read(buf.getvalue(), name or f"photo-{seed}.png")


def answered(text: str) -> Reply:
    reply = Reply(state="done")
    reply.messages = (Message.of(Role.ASSISTANT, text, channel="final"),)
    reply.segments = [Segment("answer", text, complete=True)]
    return reply


def picture_chat(kept: KeptFiles, pictures: list[Picture]) -> ChatDoc:
    """Two turns: the first with two images (in that order), the second with one, and a second
    version of the first turn (not shown) with another; each image's bytes kept with its version."""
    doc = ChatDoc(title="Pictures")
    first = Version("What differs?", replies=[answered("The colours.")], images=(pictures[0].content(), pictures[1].content()))
    other = Version("Only this one?", replies=[answered("Yes.")], images=(pictures[2].content(),))
    second = Version("And this?", replies=[answered("A third.")], images=(pictures[2].content(),))
    doc.turns = [Turn([other, first], chosen=1), Turn([second])]
    for version, shown in ((first, pictures[:2]), (other, pictures[2:3]), (second, pictures[2:3])):
        for p in shown:
            kept.keep_bytes(p.data, p.name, doc.id, version.id)
    return doc


@pytest.fixture
def pictures() -> list[Picture]:
    return [png(1, name="left.png"), png(2, (8, 30), name="right.png"), png(3, name="third.png")]


def test_a_conversation_with_images_reopens_with_the_same_images_in_order(tmp_path: Path, pictures: list[Picture]) -> None:
    kept = KeptFiles(tmp_path / "attachments")
    doc = picture_chat(kept, pictures)
    store = HistoryStore(tmp_path / "history.db")
    store.save(doc)
    store.close()
    reopened = HistoryStore(tmp_path / "history.db")
    back = reopened.load(doc.id)
    assert back is not None
    assert [[v.images for v in t.versions] for t in back.turns] == [[v.images for v in t.versions] for t in doc.turns]
    assert back.turns[0].versions[1].images == (pictures[0].content(), pictures[1].content())
    assert [m.images for m in back.messages()] == [m.images for m in doc.messages()]
    assert back.messages()[0].content[0] == pictures[0].content()  # images first, then the text
    assert back.turns[0].version.user_text == "What differs?" and IMAGE_MARKER not in back.turns[0].version.user_text
    # the column holds what identifies them, never their bytes; search sees neither
    column = reopened.db.execute("SELECT images FROM versions WHERE id = ?", (doc.turns[0].version.id,)).fetchone()[0]
    assert [e["sha256"] for e in json.loads(column)] == [pictures[0].sha256, pictures[1].sha256]
    assert len(column) < 600
    assert reopened.search("left") == [] and reopened.search(pictures[0].sha256[:12]) == []
    assert reopened.search("differs") != []
    reopened.close()
    kept.close()


def test_an_unreadable_images_column_opens_without_them_and_warns(tmp_path: Path, pictures: list[Picture], caplog: pytest.LogCaptureFixture) -> None:
    doc = ChatDoc(title="Damaged")
    doc.turns = [Turn([Version("first", replies=[answered("one")], images=(pictures[0].content(),))]),
                 Turn([Version("second", replies=[answered("two")], images=(pictures[1].content(),))])]
    store = HistoryStore(tmp_path / "history.db")
    store.save(doc)
    for value in ("{not json", json.dumps([{"type": "image", "sha256": "nope", "width": 1, "height": 1}])):
        store.db.execute("UPDATE versions SET images = ? WHERE id = ?", (value, doc.turns[0].version.id))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="store"):
            back = store.load(doc.id)
        assert back is not None and back.turns[0].version.images == ()
        assert back.turns[1].version.images == (pictures[1].content(),)  # the others whole
        assert [t.version.user_text for t in back.turns] == ["first", "second"]
        assert back.turns[0].version.reply is not None and back.turns[0].version.reply.visible_text() == "one"
        warned = [r for r in caplog.records if r.name == "store"]
        assert len(warned) == 1 and doc.turns[0].version.id in warned[0].getMessage()
    store.close()


def test_a_history_of_the_previous_schema_is_migrated_and_then_keeps_images(tmp_path: Path, pictures: list[Picture]) -> None:
    path = tmp_path / "history.db"
    raw = sqlite3.connect(path)  # a file as the version before this one wrote it
    for _name, sql in MIGRATIONS[:-1]:
        for statement in sql.split(";"):
            if statement.strip():
                raw.execute(statement)
    raw.execute("INSERT INTO conversations VALUES ('c1', 'Old', 0, '{}', 1, 2, NULL)")
    raw.execute("INSERT INTO turns VALUES ('t1', 'c1', NULL, 0, 0)")
    raw.execute("INSERT INTO versions VALUES ('v1', 't1', 0, 'Before images', NULL, NULL, 0)")
    raw.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    raw.commit()
    raw.close()
    store = HistoryStore(path)
    assert store.migrated == ("version-images",)
    assert store.backup == tmp_path / "history.db.before-version-images" and store.backup.is_file()
    old = store.load("c1")
    assert old is not None and old.turns[0].version.user_text == "Before images"
    assert old.turns[0].version.images == ()
    old.turns.append(Turn([Version("Now one", images=(pictures[0].content(),))]))
    store.save(old)
    store.close()
    again = HistoryStore(path)
    back = again.load("c1")
    assert again.migrated == ()
    assert back is not None and [t.version.images for t in back.turns] == [(), (pictures[0].content(),)]
    assert again.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    again.close()


@pytest.mark.parametrize("fmt", ["ocm", "json"])
def test_an_export_carries_the_images_and_an_import_restores_them_exactly(tmp_path: Path, pictures: list[Picture], fmt: str) -> None:
    here = KeptFiles(tmp_path / "here")
    doc = picture_chat(here, pictures)
    text = export(doc, fmt, carried(doc, here))
    here.close()
    assert {e["sha256"] for e in carried(doc, KeptFiles(tmp_path / "here"))} == {p.sha256 for p in pictures[:3]}
    # the user message's image entries, in the header by message index; the bytes as attachments
    data = json.loads(text) if fmt == "json" else None
    if data is not None:
        assert data["header"]["harmony_desk"]["images"]["0"] == [pictures[0].content().model_dump(mode="json"),
                                                                 pictures[1].content().model_dump(mode="json")]
        assert data["messages"][0]["content"] == IMAGE_MARKER * 2 + "What differs?"

    result = import_any(text)
    [back] = result.docs
    there = KeptFiles(tmp_path / "there")  # another computer: nothing kept yet
    assert restore(back, result.attachments.get(back.id), there) == []
    assert [t.version.images for t in back.turns] == [t.version.images for t in doc.turns]
    assert [t.version.user_text for t in back.turns] == ["What differs?", "And this?"]
    for turn in back.turns:
        for (name, stored), image in zip(there.files_of(turn.version.id), turn.version.images, strict=True):
            assert name == image.name and stored.name == image.sha256
            assert hashlib.sha256(stored.read_bytes()).hexdigest() == image.sha256
    store = HistoryStore(tmp_path / "history.db")
    store.save(back)
    store.close()
    reopened = HistoryStore(tmp_path / "history.db")
    loaded = reopened.load(back.id)
    reopened.close()
    assert loaded is not None and [t.version.images for t in loaded.turns] == [t.version.images for t in doc.turns]
    assert loaded.messages() == back.messages()
    # and exported from there, it carries the same bytes again
    assert {e["data"] for e in carried(loaded, there)} == {base64.b64encode(p.data).decode() for p in pictures[:3]}
    there.close()


def test_a_tampered_image_is_left_out_with_a_note_and_stays_listed(tmp_path: Path, pictures: list[Picture]) -> None:
    here = KeptFiles(tmp_path / "here")
    doc = picture_chat(here, pictures)
    entries = carried(doc, here)
    here.close()
    tampered = next(e for e in entries if e["sha256"] == pictures[1].sha256)
    tampered["data"] = base64.b64encode(png(9).data).decode()
    doc_back, listed = import_carrying(export(doc, "json", entries))
    there = KeptFiles(tmp_path / "there")
    notes = restore(doc_back, listed, there)
    assert notes == ["right.png: its content does not match its sha256"
                     " (an image: the conversation shows a placeholder for it)"]
    assert doc_back.turns[0].version.images == (pictures[0].content(), pictures[1].content())
    assert there.stored(pictures[1].sha256) is None and there.stored(png(9).sha256) is None
    assert there.stored(pictures[0].sha256) is not None
    there.close()


def test_an_image_whose_bytes_did_not_come_is_kept_listed_and_said_missing(tmp_path: Path, pictures: list[Picture]) -> None:
    here = KeptFiles(tmp_path / "here")
    doc = picture_chat(here, pictures)
    references = export(doc, "ocm", carried(doc, here, content=False))
    nothing = export(doc, "ocm")  # no attachments at all
    here.close()
    there = KeptFiles(tmp_path / "there")
    back, listed = import_carrying(references)
    notes = restore(back, listed, there)
    assert len(notes) == 3 and all("not kept here" in n and "placeholder" in n for n in notes)
    assert [t.version.images for t in back.turns] == [t.version.images for t in doc.turns]
    back, listed = import_carrying(nothing)
    assert listed is None
    notes = restore(back, listed, there)
    assert notes == [f"{p.name} (message {n}): its bytes are not in the file and not kept here;"
                     " the conversation shows a placeholder for it" for p, n in ((pictures[0], 1), (pictures[1], 1),
                                                                                 (pictures[2], 2))]
    # bytes already kept on this computer are kept with the imported conversation's messages
    there.keep_bytes(pictures[2].data, "elsewhere.png", "another-chat", "another-version")
    back, listed = import_carrying(nothing)
    assert len(restore(back, listed, there)) == 2
    assert there.files_of(back.turns[1].version.id) == [("third.png", there.folder / pictures[2].sha256)]
    there.close()


def test_an_image_entry_that_is_not_valid_fails_the_import_with_its_place(tmp_path: Path, pictures: list[Picture]) -> None:
    doc = ChatDoc(title="One")
    doc.turns = [Turn([Version("look", replies=[answered("ok")], images=(pictures[0].content(),))])]
    data = json.loads(export(doc, "json"))
    data["header"]["harmony_desk"]["images"]["0"][0]["width"] = 0
    with pytest.raises(TranscriptError, match=r"harmony_desk.images.0\[0\] is not a valid image"):
        import_carrying(json.dumps(data))
    data["header"]["harmony_desk"]["images"] = {"1": [pictures[0].content().model_dump(mode="json")]}
    with pytest.raises(TranscriptError, match="is no user message"):
        import_carrying(json.dumps(data))


def test_markdown_shows_each_image_as_a_line() -> None:
    image = ImageContent(sha256="a" * 64, width=640, height=480, name="cat.jpg", mime="image/jpeg")
    doc = ChatDoc(title="Cat")
    doc.turns = [Turn([Version("Whose cat?", replies=[answered("Yours.")], images=(image,))])]
    md = export(doc, "md")
    assert "[image: cat.jpg, 640×480]\n\nWhose cat?" in md
    assert IMAGE_MARKER not in md and "a" * 64 not in md
