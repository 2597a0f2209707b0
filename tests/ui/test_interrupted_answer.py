"""L10: an answer cut by the app stopping says "Interrupted" as a Stop says "Stopped" (in the
window and in the terminal's export), and a finished valid JSON answer offers no Continue."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
from app.domain.interrupted import INTERRUPTED_NOTICE
from app.store.history import HistoryStore
from tests.gui_helpers import real_model_window
from tests.ui.test_window import make_window, send

ROOT = Path(__file__).resolve().parents[2]
STOP_NOTICE = "Stopped. The partial answer is kept."


def crashed_chat(store: HistoryStore) -> ChatDoc:
    """A conversation whose answer was checkpointed while it streamed and never finished: what
    the store holds after the app is killed mid-answer (`tests/store/test_crash.py`)."""
    doc = ChatDoc(title="Story")
    version = Version("Tell a story")
    doc.turns.append(Turn([version]))
    streaming = Reply(segments=[Segment("answer", "Once upon a time")], model="scripted")
    version.replies.append(streaming)
    store.checkpoint(doc, version, streaming)
    return doc


def test_a_crash_cut_answer_has_the_interrupted_notice_and_footer_until_continued(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    crashed_chat(HistoryStore(tmp_path / "history.db"))
    rest = "<|channel|>final<|message|> there was a cat.<|return|>"
    window, _ = make_window(qtbot, tmp_path, [rest], store=HistoryStore(tmp_path / "history.db"))
    try:
        turn = window.transcript.turns[-1]
        assert turn.turn.version.user_text == "Tell a story"
        notice = turn.interrupted
        assert not notice.isHidden() and notice.text() == INTERRUPTED_NOTICE
        assert notice.objectName() == "notice"  # looks and reads as the Stop's notice
        assert not turn.continue_.isHidden()  # the cut answer can still go on
        qtbot.waitUntil(lambda: "interrupted" in turn.footer.text(), timeout=5000)  # not empty
        with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
            turn.continue_.click()
        turn = window.transcript.turns[-1]
        reply = turn.turn.version.reply
        assert reply is not None and reply.state == "done"
        said = reply.visible_text()
        assert said.startswith("Once upon a time") and said.endswith(" there was a cat.")
        assert turn.interrupted.isHidden() and turn.continue_.isHidden()
    finally:
        window.close()
        window.host.close()


def test_a_stopped_answer_has_the_stop_notice_and_not_the_interrupted_one(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    long = "<|channel|>final<|message|>" + "word " * 400 + "<|return|>"
    window, _ = make_window(qtbot, tmp_path, [long], delay_s=0.002)
    try:
        c = window.controller
        with qtbot.waitSignal(c.segmentText, timeout=10_000):
            c.send("Go on")
        with qtbot.waitSignal(c.replyFinished, timeout=10_000):
            c.stop()
        turn = window.transcript.turns[-1]
        notices = [w.text() for w in turn.segments if w.objectName() == "notice"]
        assert notices == [STOP_NOTICE] and turn.interrupted.isHidden()
    finally:
        window.close()
        window.host.close()


def test_the_terminals_markdown_export_says_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("HARMONY_DESK_DATA", str(data))
    doc = crashed_chat(HistoryStore())
    out = tmp_path / "story.md"
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-m", "app", "history", "export", "--format", "md", doc.id, str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "Once upon a time" in text and f"*({INTERRUPTED_NOTICE})*" in text
    assert "this answer is incomplete" not in text


def test_a_finished_valid_json_answer_offers_no_continue(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    """SmolLM2 in JSON mode: the constraint closes the value and the answer ends there (no
    end-of-turn token follows it); Continue once showed under that whole, valid answer."""
    schema = (
        '{"type":"object","properties":{"city":{"type":"string","maxLength":12}},'
        '"required":["city"]}'
    )
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=64) as window:
        window.composer.json_mode.setChecked(True)
        window.composer.schema.setPlainText(schema)
        send(qtbot, window, "Which city is the capital of France? Answer in JSON.", 60_000)
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None
        verdicts = [s.data for s in reply.segments if s.kind == "json"]
        assert verdicts and verdicts[-1]["valid"] is True
        turn = window.transcript.turns[-1]
        assert turn.continue_.isHidden() and not reply.continuable
        assert turn.interrupted.isHidden()
