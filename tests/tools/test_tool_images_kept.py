"""Images a tool returned survive a restart: the window's chat controller on the tiny vision model
(tests/tiny_vision.py, loaded with its projector) and a real MCP server whose tool returns a PNG
(tests/fixtures/mcp_hygiene_server.py, the SDK's own server over stdio), saving to a real SQLite
history. A turn's tool image is kept with the conversation once the reply is saved; a new
controller on a new worker, on the same database file, with nothing held in memory (a restart),
reopens the conversation and its next turn shows the model the tool's image again (its 16 image
tokens counted). With the kept file deleted, the next turn still answers: the tool message reads
a note in the image's place and the reply says so in a notice."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.controllers.attachments import kept_of
from app.controllers.bridge import EngineBridge
from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost
from app.domain.history import Reply
from app.domain.messages import Author, Conversation, ImageContent, Message, Role, TextContent
from app.engine.local.client import WorkerClient
from app.engine.protocol import IMAGE_ID
from app.engine.turn.tool_results import tool_images_found
from app.images import kept
from app.images.decode import read
from app.store.history import HistoryStore
from app.tools.mcp.config import McpServer, save_servers
from tests import tiny_vision
from tests.fixtures.mcp_hygiene_server import png

SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hygiene_server.py")
PICTURE = hashlib.sha256(png(7)).hexdigest()  # what the server's `picture` tool returns
LOST = "no longer kept on this computer"


@pytest.fixture(scope="module")
def vision_pair() -> tuple[Path, Path]:
    return tiny_vision.build_text(), tiny_vision.build_projector()


@pytest.fixture()
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own data folder (the history, the kept files, the audit) and MCP servers."""
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    monkeypatch.setenv("HARMONY_DESK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HARMONY_DESK_CACHE", str(tmp_path / "cache"))  # its KV snapshots too
    save_servers({"hyg": McpServer(command=sys.executable, args=(SERVER,), timeout=60)})
    yield tmp_path / "data"
    kept.forget()  # nothing this test held is left for the next one


class Running:
    """One run of the app: a worker on the tiny vision pair, a host, a chat controller on the
    history file `db`."""

    def __init__(self, pair: tuple[Path, Path], db: Path) -> None:
        self.client = WorkerClient()
        self.client.load(pair[0], n_ctx=1024, n_threads=1, projector=pair[1])
        self.host = ModelHost(EngineBridge())
        self.host.use(self.client, "smollm2", "tiny vision", loader=self.client)
        self.store = HistoryStore(db)
        self.chat = ChatController(self.host, self.store)
        self.chat.settle()  # the newest conversation is read off the GUI thread
        self.chat.max_tokens = 8

    def close(self) -> None:
        self.chat.close()
        self.host.close()
        self.client.close()
        self.store.close()


def answered(qtbot: Any, chat: ChatController, text: str) -> Reply:
    """Send `text`; run the first tool call the reply asks for and deny any later one; the
    finished reply, once what it carries is kept."""
    finished: list[object] = []
    decided: set[str] = set()
    chat.replyFinished.connect(lambda *_: finished.append(True))

    def waiting() -> str | None:
        reply = chat.doc.turns[-1].version.reply
        calls = [s.data for s in reply.segments if s.kind == "tool"] if reply else []
        pending = [str(d["call_id"]) for d in calls if d.get("state") == "pending"]
        return next((c for c in pending if c not in decided), None)

    assert chat.send(text)
    while not finished:
        qtbot.waitUntil(lambda: bool(finished) or waiting() is not None, timeout=120_000)
        call = waiting()
        if call is not None:
            decided.add(call)
            chat.decide(call, allow=len(decided) == 1)
    chat.settle()  # the reply saved, then its tool images kept (the store's thread, in order)
    reply = chat.doc.turns[-1].version.reply
    assert reply is not None and reply.state != "failed", reply
    return reply


def first_turn(qtbot: Any, pair: tuple[Path, Path], db: Path) -> tuple[str, Reply]:
    """A saved conversation whose first turn ran the `picture` tool (the model shown its image,
    once per call: the model may call it more than once at once); the conversation's id and
    that turn's reply. The run then ends, forgetting what it held."""
    run = Running(pair, db)
    try:
        run.chat.set_tools(("mcp:hyg",))
        run.chat.tool_choice = "hyg__picture"  # the first generation calls it
        run.chat.max_tokens = 48  # room for the whole call
        reply = answered(qtbot, run.chat, "Take a picture.")
        tool = [m for m in reply.messages if m.author.role is Role.TOOL]
        assert tool, (reply.segments, reply.messages, reply.state, reply.error)
        shown = [i.sha256 for m in tool for i in m.images]  # a denied later call has none
        assert shown and set(shown) == {PICTURE}, (reply.segments, reply.messages)
        assert reply.debug.timings["images"] == len(shown)  # seen through the projector
        doc, version = run.chat.doc.id, run.chat.doc.turns[-1].version.id
        assert kept_of(version) == []  # the user's message lists only what the user attached
    finally:
        run.close()
    kept.forget()  # a restart: nothing of this run is held any more
    assert kept.find(PICTURE) is not None  # found again among the files kept on disk
    kept.forget()
    return doc, reply


def reopened_turn(qtbot: Any, pair: tuple[Path, Path], db: Path, doc: str) -> tuple[Reply, str]:
    """The next turn of conversation `doc`, reopened from the history by a new run: its reply
    and its last prompt as text (an image's place as <IMAGE>)."""
    run = Running(pair, db)
    try:
        assert run.chat.doc.id == doc and len(run.chat.doc.turns) == 1
        run.chat.tool_choice = "none"  # this turn answers: the image is in its history
        reply = answered(qtbot, run.chat, "What did the picture show?")
        table = run.host.session().token_table()
        ids = reply.debug.prompt_ids
        text = b"".join(b"<IMAGE>" if i == IMAGE_ID else table[i] for i in ids)
        return reply, text.decode(errors="replace")
    finally:
        run.close()


def test_a_tool_image_is_shown_again_in_a_conversation_reopened_after_a_restart(
    qtbot: Any, qloop: Any, folders: Path, vision_pair: tuple[Path, Path]
) -> None:
    db = folders / "history.db"
    doc, first = first_turn(qtbot, vision_pair, db)
    assert (folders / "attachments" / PICTURE).is_file()  # kept with the conversation
    shown = sum(len(m.images) for m in first.messages)
    reply, prompt = reopened_turn(qtbot, vision_pair, db, doc)
    assert prompt.count("<IMAGE>") == shown  # the tool's image, in its place
    assert prompt.index("Here is the picture.") < prompt.index("<IMAGE>")
    assert prompt.index("<IMAGE>") < prompt.index("What did the picture show?")
    timings = reply.debug.timings  # read again, through the projector
    assert (
        timings["images"] == shown and timings["image_tokens"] == shown * tiny_vision.N_IMAGE_TOKENS
    )
    assert not [s for s in reply.segments if s.kind == "notice"]


def test_a_tool_image_deleted_from_disk_is_a_note_and_a_notice_never_a_failed_turn(
    qtbot: Any, qloop: Any, folders: Path, vision_pair: tuple[Path, Path]
) -> None:
    db = folders / "history.db"
    doc, first = first_turn(qtbot, vision_pair, db)
    stored = folders / "attachments" / PICTURE
    assert stored.is_file()
    stored.unlink()  # deleted by hand (or a history from a version that did not keep it)
    reply, prompt = reopened_turn(qtbot, vision_pair, db, doc)
    assert reply.state in ("done", "incomplete"), reply  # answered (8 tokens at most)
    assert "<IMAGE>" not in prompt and not reply.debug.timings.get("image_tokens")
    tool = next(m for m in first.messages if m.author.role is Role.TOOL and m.images)
    name = tool.images[0].name
    note = f"[{name}: {LOST}]"
    assert prompt.index("Here is the picture.") < prompt.index(note)  # in the image's place
    assert prompt.index(note) < prompt.index("What did the picture show?")
    notices = [s.text for s in reply.segments if s.kind == "notice"]
    assert any(name in n and LOST in n and "a note in its place" in n for n in notices), notices
    store = HistoryStore(db)
    try:
        saved = store.load(doc)
    finally:
        store.close()
    assert saved is not None and saved.turns[0].version.reply is not None
    old = [m for m in saved.turns[0].version.reply.messages if m.author.role is Role.TOOL]
    kept_here = [i.sha256 for m in old for i in m.images]  # a denied later call has none
    assert kept_here and set(kept_here) == {PICTURE}  # the history is unchanged


def test_only_a_tool_image_found_nowhere_becomes_a_note(folders: Path) -> None:
    """A user's missing image stays as it is (the session says to attach it again); a tool's
    image held for the run stays an image; a tool's found nowhere becomes a note, said once
    per message that carried it."""
    held = read(png(3), "held.png")
    kept.remember(held)
    gone = ImageContent(sha256="ab" * 32, width=32, height=32, name="gone.png")
    user = Message(author=Author(role=Role.USER), content=(gone, TextContent(text="Look.")))
    tool = Message(
        author=Author(role=Role.TOOL, name="functions.hyg__picture"),
        content=(TextContent(text="[image 1] [image 2]"), held.content(), gone),
    )
    conversation = Conversation(messages=(user, tool, tool))
    noted, said = tool_images_found(conversation)
    assert noted.messages[0] == user
    for message in noted.messages[1:]:
        assert message.images == (held.content(),)
        assert message.text.endswith(f"\ue0f0\n[gone.png: {LOST}]")
    assert (
        said
        == [
            "gone.png, an image functions.hyg__picture returned earlier in this conversation, is"
            f" {LOST}: the model reads a note in its place."
        ]
        * 2
    )
    assert tool_images_found(Conversation(messages=(user, noted.messages[1]))) == (
        Conversation(messages=(user, noted.messages[1])),
        [],
    )
