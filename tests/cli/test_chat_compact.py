"""`/compact` and `/compact undo` in the terminal chat, on the bundled SmolLM2 with real llama.cpp
and a saved chat: `/compact` compacts at once and says so, the record joins the next reply in
the history (where the window shows it), later turns carry it, and `/compact undo` drops it from
the history too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.domain.compaction import recorded
from app.store.history import HistoryStore
from tests.cli.test_chat_images import chat, saved_id

LONG = "Remember this, please: {}. " + "It matters for later. " * 10
FACTS = ["the boat is called Marisol", "my sister keeps nine goats", "the code is HX-31",
         "the meeting is on Thursday"]


def test_compact_now_and_undo_in_a_saved_terminal_chat(tmp_path: Path, smollm_model: Any) -> None:
    lines = [LONG.format(f) for f in FACTS] + ["/compact", "What is the boat called?", "/compact undo", "Thanks."]
    data = tmp_path / "data"
    done = chat(data, smollm_model, "--ctx", "2048", "--overflow", "summarise", "--save",
                stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[compacting 3 exchanges" in done.stderr, done.stderr[-3000:]
    assert "[compacted: 3 exchanges summarised," in done.stderr
    assert "[compaction undone: 3 exchanges summarised," in done.stderr
    store = HistoryStore(data / "history.db")
    doc = store.load(saved_id(done.stderr))
    store.close()
    assert doc is not None and len(doc.turns) == 6  # the commands are not messages
    marked = doc.turns[4].version.reply
    assert marked is not None
    notices = [s for s in marked.segments if "undone" in s.data]
    assert notices and "Compaction undone" in notices[0].text  # recorded on the next reply, then undone
    assert recorded(marked.segments) is None and doc.compaction() is None
    assert [t.version.user_text for t in doc.turns][4] == "What is the boat called?"


def test_the_interactive_chat_compacts_after_an_answer_so_the_next_turn_does_not_wait(
    tmp_path: Path, smollm_model: Any
) -> None:
    lines = [LONG.format(f) for f in FACTS] + ["What is the boat called?", "Thanks."]
    data = tmp_path / "data"
    done = chat(data, smollm_model, "--ctx", "512", "--max-tokens", "32", "--overflow", "summarise",
                "--save", stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[compacted: " in done.stderr, done.stderr[-3000:]
    store = HistoryStore(data / "history.db")
    doc = store.load(saved_id(done.stderr))
    store.close()
    assert doc is not None and len(doc.turns) == len(lines)
    marked = [t.version.reply for t in doc.turns if t.version.reply and recorded(t.version.reply.segments)]
    assert marked, "no reply carries the compaction"
    reply = marked[0]
    assert reply is not None
    kinds = [s.kind for s in reply.segments]
    notice = next(i for i, s in enumerate(reply.segments) if "compaction" in s.data)
    assert "answer" in kinds[:notice]  # made after that turn's answer, not before it
    assert doc.compaction() is not None and all(t.version.reply.state != "failed" for t in doc.turns)  # type: ignore[union-attr]
