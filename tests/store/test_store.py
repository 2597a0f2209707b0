"""The history store on real SQLite files: round trips, checkpoints, trash, search, bad files."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.messages import Message, ReasoningEffort, Role
from app.store.database import StoreError, StoreProblem, open_database
from app.store.history import HistoryStore


def reply(text: str, analysis: str = "", state: str = "done") -> Reply:
    r = Reply(segments=[Segment("answer", text, complete=True)], state=state)  # type: ignore[arg-type]
    r.messages = (Message.of(Role.ASSISTANT, text, channel="final"),)
    r.debug.analysis = analysis
    r.debug.token_ids = [1, 2, 3]
    return r


def sample() -> ChatDoc:
    doc = ChatDoc(title="Tea", instructions="Be brief.", tools=("calculate",))
    first = Version("What is green tea?", ReasoningEffort.LOW, None, [reply("Unoxidised leaves.", "think-1"),
                                                                      reply("A tea.", "think-2")], chosen=1)
    doc.turns.append(Turn([first]))
    second = Version("And oolong?", None, {"type": "object"}, [reply("Partly oxidised.")])
    tool = Segment("tool", data={"tool": "functions.calculate", "call_id": "call_1", "state": "ok", "result": "2"})
    second.replies[0].segments.insert(0, tool)
    doc.turns.append(Turn([second]))
    doc.edit(1, "And black tea?")  # the oolong branch stays with its version
    doc.turns[1].version.replies.append(reply("Fully oxidised."))
    return doc


def test_a_conversation_tree_comes_back_whole(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    doc = sample()
    store.save(doc)
    store.close()
    again = HistoryStore(tmp_path / "history.db").load(doc.id)
    assert again is not None
    assert (again.title, again.instructions, again.tools) == ("Tea", "Be brief.", ("calculate",))
    assert [t.version.user_text for t in again.turns] == ["What is green tea?", "And black tea?"]
    first = again.turns[0].version
    assert first.effort is ReasoningEffort.LOW and first.chosen == 1
    from dataclasses import fields

    for built in (again.turns[0], first, first.replies[0], first.replies[0].segments[0]):
        assert set(vars(built)) == {f.name for f in fields(built)}  # every field, nothing more
    assert [r.segments[0].text for r in first.replies] == ["Unoxidised leaves.", "A tea."]
    assert [r.debug.analysis for r in first.replies] == ["think-1", "think-2"]
    assert first.replies[0].messages == doc.turns[0].version.replies[0].messages
    second = again.turns[1]
    assert [v.user_text for v in second.versions] == ["And oolong?", "And black tea?"]
    assert second.versions[0].json_schema == {"type": "object"}
    assert second.versions[0].replies[0].segments[0].data["call_id"] == "call_1"
    assert again.messages() == doc.messages()
    again.choose_version(1, 0)
    assert again.turns[1].version.replies[0].visible_text().endswith("Partly oxidised.")


def test_a_reply_checkpointed_while_streaming_comes_back_incomplete(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    doc = ChatDoc(title="Story")
    version = Version("Tell a story")
    doc.turns.append(Turn([version]))
    streaming = Reply(segments=[Segment("answer", "Once upon")])
    version.replies.append(streaming)
    store.checkpoint(doc, version, streaming)
    streaming.segments[0].text += " a time"
    store.checkpoint(doc, version, streaming)
    loaded = HistoryStore(tmp_path / "history.db").load(doc.id)
    assert loaded is not None
    back = loaded.turns[0].version.replies[0]
    assert back.segments[0].text == "Once upon a time"
    assert back.state == "incomplete" and back.error.startswith("E-STREAM-TRUNCATED")


def test_trash_undo_restore_and_purge(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    a, b = store.new("first"), store.new("second")
    store.pin(a.id)
    assert [d.title for d in store.listed()] == ["first", "second"]
    store.delete(a.id)
    assert [d.title for d in store.listed()] == ["second"] and store.trash()[0][1] == "first"
    assert store.undo_delete() == a.id and len(store.listed()) == 2
    store.delete(b.id)
    assert store.purge(older_than_days=1) == 0  # the retention period has not passed
    assert store.purge(older_than_days=0) == 1 and store.load(b.id) is None
    store.rename(a.id, "renamed")
    assert store.listed()[0].title == "renamed"


def test_search_covers_visible_text_and_titles_but_not_analysis(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    doc = sample()
    store.save(doc)
    other = store.new("Coffee")
    assert [d.id for d in store.listed("oxidised")] == [doc.id]
    assert [d.id for d in store.listed("coffee")] == [other.id]
    assert store.listed("think") == []  # analysis is not in the index
    assert store.search_analysis(doc.id, "think-2") == [(doc.turns[0].version.replies[1].id, "think-2")]
    hits = store.search("unoxidised")
    assert hits and hits[0][0] == doc.id and "[Unoxidised]" in hits[0][2]
    assert store.listed('"quotes" and (parentheses') == []  # user text is never FTS syntax
    store.delete(doc.id)
    assert store.listed("oxidised") == []


def test_a_new_file_is_migrated_and_an_old_one_backed_up_first(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    opened = open_database(path)
    assert opened.migrated == (
        "initial", "replies-by-conversation", "debug-records-apart", "version-images"
    )
    assert opened.backup is None
    assert opened.connection.execute("PRAGMA user_version").fetchone()[0] == 4
    assert opened.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert opened.connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    opened.connection.close()
    old = tmp_path / "old.db"
    raw = sqlite3.connect(old)
    raw.execute("CREATE TABLE notes (text TEXT)")
    raw.execute("INSERT INTO notes VALUES ('keep me')")
    raw.commit()
    raw.close()
    upgraded = open_database(old)
    assert upgraded.backup == tmp_path / "old.db.before-initial"
    copy = sqlite3.connect(upgraded.backup)
    assert copy.execute("SELECT text FROM notes").fetchall() == [("keep me",)]
    assert copy.execute("PRAGMA user_version").fetchone()[0] == 0
    copy.close()
    upgraded.connection.close()


@pytest.mark.parametrize("kind", ["garbage", "newer", "damaged"])
def test_a_bad_database_is_refused_and_left_untouched(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "history.db"
    if kind == "garbage":
        path.write_bytes(b"this is not sqlite at all" * 100)
    else:
        HistoryStore(path).close()
        raw = sqlite3.connect(path)
        if kind == "newer":
            raw.execute("PRAGMA user_version = 99")
        raw.close()
        if kind == "damaged":
            data = bytearray(path.read_bytes())
            data[4096:8192] = b"\xff" * 4096  # a page of the schema tree overwritten
            path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(StoreError) as refused:
        HistoryStore(path)
    expected = {"garbage": StoreProblem.NOT_A_DATABASE, "newer": StoreProblem.NEWER,
                "damaged": (StoreProblem.DAMAGED, StoreProblem.NOT_A_DATABASE)}[kind]
    assert refused.value.problem in (expected if isinstance(expected, tuple) else (expected,))
    assert "left untouched" in refused.value.message and "fresh database" in refused.value.message
    assert path.read_bytes() == before


def test_a_full_disk_fails_clearly_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    store = HistoryStore(path)
    doc = sample()
    store.save(doc)
    store.db.execute("PRAGMA max_page_count = " + str(store.db.execute("PRAGMA page_count").fetchone()[0] + 2))
    big = ChatDoc(title="big")
    version = Version("x" * 10)
    big.turns.append(Turn([version]))
    version.replies.append(reply("y" * 2_000_000))
    with pytest.raises(StoreError, match="full") as failed:
        store.save(big)
    assert failed.value.problem is StoreProblem.UNWRITABLE
    assert store.load(big.id) is None  # nothing half-written
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert store.load(doc.id) is not None and store.load(doc.id).messages() == doc.messages()  # type: ignore[union-attr]


def test_search_while_a_reply_streams_into_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    writer = HistoryStore(path)
    reader = HistoryStore(path)
    doc = ChatDoc(title="live")
    version = Version("go")
    doc.turns.append(Turn([version]))
    streaming = Reply(segments=[Segment("answer", "")])
    version.replies.append(streaming)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(200):
                streaming.segments[0].text += f" word{i}"
                writer.checkpoint(doc, version, streaming)
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    seen = 0
    while thread.is_alive():
        seen += len(reader.listed("word1"))
        reader.search("word")
    thread.join()
    assert not failures
    assert [d.id for d in reader.listed("word199")] == [doc.id]


def test_settings_are_validated_and_saved_atomically(tmp_path: Path) -> None:
    from app.settings import Settings, load_settings, save_settings

    path = tmp_path / "settings.json"
    assert load_settings(path) == Settings()
    save_settings(Settings(trash_retention_days=7), path)
    assert load_settings(path).trash_retention_days == 7
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    path.write_text('{"trash_retention_days": -3}')
    assert load_settings(path).trash_retention_days == 30  # a bad value: its default
    assert (tmp_path / "settings.json.invalid").read_text() == '{"trash_retention_days": -3}'
    path.write_text("{half a file")
    assert load_settings(path) == Settings()
    [aside] = tmp_path.glob("settings.json.unusable-*")  # set aside, never read again
    assert aside.read_text() == "{half a file" and not path.exists()  # kept as written
    good = {"name": "lab", "base_url": "http://127.0.0.1:8000/v1", "model": "m"}
    path.write_text(json.dumps({"endpoints": [good, {"name": "bad name!", "model": ""}]}))
    assert [e.name for e in load_settings(path).endpoints] == ["lab"]  # the others are kept
    assert "key" not in " ".join(Settings.model_fields)  # nothing secret has a place here


def test_the_trash_retention_applies_when_the_history_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from app.controllers.history_host import open_history
    from app.controllers.ui_state import UiState
    from app.settings import Settings, save_settings

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    save_settings(Settings(trash_retention_days=2))
    state = UiState(tmp_path / "ui.json")
    state.set("history_db", str(tmp_path / "history.db"))
    store = HistoryStore(tmp_path / "history.db")
    old, recent = store.new("old"), store.new("recent")
    store.delete(old.id)
    store.delete(recent.id)
    store.db.execute("UPDATE conversations SET deleted_at = ? WHERE id = ?", (time.time() - 3 * 86400, old.id))
    store.close()
    reopened = open_history(lambda problem: "quit", state)
    assert reopened is not None and [t[1] for t in reopened.trash()] == ["recent"]


def test_every_kind_of_message_comes_back_equal(tmp_path: Path) -> None:
    from app.domain.messages import Author, DeveloperContent, TextContent

    doc = ChatDoc(title="kinds")
    r = reply("done")
    r.messages = (
        Message.of(Role.ASSISTANT, "thinking", channel="analysis"),
        Message.of(Role.ASSISTANT, '{"a":1}', channel="commentary", recipient="functions.f", content_type="<|constrain|>json"),
        Message(author=Author(role=Role.TOOL, name="functions.f"), content=(TextContent(text="ok"),), channel="commentary",
                recipient="assistant"),
        Message.of(Role.DEVELOPER, DeveloperContent(instructions="odd, but kept")),
        Message.of(Role.ASSISTANT, "done", channel="final"),
    )
    r.segments.insert(0, Segment("tool", data={"tool": "functions.f", "call_id": "call_9", "state": "ok"}))
    doc.turns.append(Turn([Version("go", replies=[r])]))
    store = HistoryStore(tmp_path / "history.db")
    store.save(doc)
    described = store.db.execute("SELECT intent, call_id FROM messages WHERE reply_id = ? ORDER BY position", (r.id,))
    assert described.fetchall() == [("analysis", None), ("tool-call", "call_9"), ("tool-result", "call_9"),
                                    ("developer", None), ("answer", None)]
    loaded = HistoryStore(tmp_path / "history.db").load(doc.id)
    assert loaded is not None and loaded.turns[0].version.replies[0].messages == r.messages
    assert [m.text for m in loaded.messages()] == [m.text for m in doc.messages()]


def test_an_older_history_is_upgraded_after_a_backup_and_keeps_its_conversations(tmp_path: Path) -> None:
    import json

    from app.store.database import MIGRATIONS

    path = tmp_path / "history.db"
    raw = sqlite3.connect(path)  # a file as the first version of the schema wrote it
    raw.executescript(MIGRATIONS[0][1])
    raw.execute("INSERT INTO conversations VALUES ('c1', 'Tea', 1, '{\"instructions\": \"Be brief.\"}', 1, 2, NULL)")
    raw.execute("INSERT INTO turns VALUES ('t1', 'c1', NULL, 0, 0)")
    raw.execute("INSERT INTO versions VALUES ('v1', 't1', 0, 'What is green tea?', 'low', NULL, 0)")
    final = Message.of(Role.ASSISTANT, "Unoxidised leaves.", channel="final")
    body = json.dumps([final.model_dump(mode="json")])
    debug = {"analysis": "think-1", "prompt_ids": [5, 6], "token_ids": [1, 2, 3], "events": ["e"],
             "generation_start": 1, "generation_messages": 1, "open_segments": {"0": 0}}
    raw.execute("INSERT INTO replies VALUES ('r1', 'v1', 0, 'streaming', '', 'tiny', 'stop', 'temp 1',"
                " '{\"decode_tps\": 9.0}', ?, ?, ?, 3)",
                (json.dumps([{"kind": "answer", "text": "Unoxidised", "data": {}, "complete": False}]),
                 json.dumps(debug), body))
    raw.execute("INSERT INTO messages VALUES ('r1', 0, 'assistant', NULL, 'final', NULL, NULL,"
                " 'Unoxidised leaves.', ?)", (json.dumps(final.model_dump(mode="json")),))
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    upgraded = HistoryStore(path)
    assert upgraded.migrated == ("replies-by-conversation", "debug-records-apart", "version-images")
    assert upgraded.backup == tmp_path / "history.db.before-replies-by-conversation"
    loaded = upgraded.load("c1")
    assert loaded is not None and loaded.title == "Tea" and loaded.instructions == "Be brief."
    r = loaded.turns[0].version.replies[0]
    assert r.messages == (final,) and r.open_segments == {0: 0} and r.state == "incomplete"
    d = r.debug
    assert (d.analysis, d.prompt_ids, d.token_ids, d.events) == ("think-1", (5, 6), [1, 2, 3], ["e"])
    assert (d.generation_start, d.stop_reason, d.sampling, d.timings) == (1, "stop", "temp 1", {"decode_tps": 9.0})
    assert upgraded.search_analysis("c1", "THINK") == [("r1", "think-1")]
    assert upgraded.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    old = sqlite3.connect(upgraded.backup)
    assert old.execute("PRAGMA user_version").fetchone()[0] == 1
    old.close()
