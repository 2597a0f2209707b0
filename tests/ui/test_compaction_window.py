"""Compaction in the window, through its real controllers on the offscreen platform, with the
scripted token source (the summary generation comes first, then the answer): Compact now (the
status bar's button and `/compact`) compacts at once and the transcript's marker says so, with
the summary behind Show summary; the next turn's prompt carries the summary, and the debug pane
shows that prompt; Undo takes the record out (in the store too) and the next prompt is the whole
conversation again; a chat under summarise with a small context compacts within a turn, at the
settings' threshold; exports carry the marker and its summary, and an import puts it back. With
the bundled SmolLM2 in a real window: the compacted conversation's later turns reuse its prefix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.domain.budget import Overflow
from app.domain.compaction import SUMMARY_OPENS, recorded
from app.engine.protocol import ModelInfo
from app.harmony import encoding as enc
from app.store.exchange import export, import_text
from app.store.history import HistoryStore
from app.ui.transcript.compaction_marker import CompactionMarker
from app.ui.window.main_window import MainWindow
from tests.ui.test_window import make_window, send

SUMMARY = "The user keeps goats in Tromsø and owns a boat called Marisol."


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


FACTS = [
    "Remember: my sister keeps nine goats in Tromsø. " + "More about the goats. " * 20,
    "Remember: the boat is called Marisol. " + "More about the boat. " * 20,
    "Remember: the budget is 4,200 euros. " + "More about the money. " * 20,
]


def markers(window: MainWindow) -> list[CompactionMarker]:
    return [
        w for t in window.transcript.turns for w in t.segments if isinstance(w, CompactionMarker)
    ]


def prompt_text(client: Any, index: int = -1) -> str:
    return str(client.encoding.decode(client.prompts[index]))


def compacted_window(
    qtbot: Any, tmp_path: Path, after: list[str]
) -> tuple[MainWindow, Any, HistoryStore]:
    """A saved chat of three exchanges, compacted with the status bar's Compact now."""
    store = HistoryStore(tmp_path / "h.db")
    scripts = [
        final("Noted, goats."),
        final("Noted, boat."),
        final("Noted, budget."),
        final(SUMMARY),
        *after,
    ]
    window, client = make_window(qtbot, tmp_path, scripts, store=store)
    for fact in FACTS:
        send(qtbot, window, fact)
    c = window.controller
    assert window.status.compact.isEnabled() and not window.status.compacted.isVisible()
    with qtbot.waitSignal(c.compactions.changed, timeout=10_000):
        window.status.compact.click()
    assert not c.busy
    return window, client, store


def test_compact_now_shows_a_marker_with_its_summary_and_the_next_prompt_carries_it(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window, client, _ = compacted_window(qtbot, tmp_path, [final("Marisol.")])
    c = window.controller
    compaction = c.doc.compaction()
    assert compaction is not None and compaction.summary == SUMMARY
    assert 1 <= compaction.exchanges < 3 and compaction.tokens_after < compaction.tokens_before
    assert "Summarise the conversation above" in prompt_text(client)  # the summary's own prompt
    (marker,) = markers(window)
    assert marker.said.text() == f"Compacted: {compaction.said()}" and not marker.undo.isHidden()
    assert marker.objectName() == "notice" and compaction.said() in marker.toolTip()
    assert window.transcript.turns[-1].segments[-1] is marker  # on the latest reply, at once
    assert marker.summary.isHidden()
    marker.toggle.click()
    assert not marker.summary.isHidden() and SUMMARY in marker.summary.toPlainText()
    assert marker.toggle.text() == "Hide summary"
    # the chat keeps its compaction: its policy became summarise (the menu says so)
    assert (
        c.doc.overflow is Overflow.SUMMARISE and window.overflow_menu.chosen() is Overflow.SUMMARISE
    )
    assert window.status.compacted.isVisible()
    assert f"compacted: {compaction.exchanges} exchange" in window.status.compacted.toolTip()
    window.set_debug(True, remember=False)
    send(qtbot, window, "What is the boat called?")
    sent = prompt_text(client)
    assert SUMMARY_OPENS in sent and SUMMARY in sent and "nine goats" not in sent  # covered: out
    assert "What is the boat called?" in sent and "the budget is 4,200 euros" in sent  # kept
    assert SUMMARY in window.debug.prompt.toPlainText()  # what the model now sees, exactly
    assert len(markers(window)) == 1 and c.doc.compaction() == compaction  # made once


def test_undo_gives_the_whole_conversation_back_and_is_saved(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window, client, store = compacted_window(qtbot, tmp_path, [final("Marisol."), final("Nine.")])
    c = window.controller
    send(qtbot, window, "What is the boat called?")
    assert SUMMARY in prompt_text(client)
    (marker,) = markers(window)
    marker.undo.click()
    marker = markers(window)[0]
    assert marker.said.text().startswith("Compaction undone: ") and marker.undo.isHidden()
    marker.toggle.click()
    assert SUMMARY in marker.summary.toPlainText()  # still readable: what was undone
    assert c.doc.compaction() is None and not window.status.compacted.isVisible()
    c.saved()
    reopened = HistoryStore(store.path).load(c.doc.id)
    assert reopened is not None and reopened.compaction() is None
    record = [
        s
        for t in reopened.turns
        if t.version.reply
        for s in t.version.reply.segments
        if "undone" in s.data
    ]
    assert record and "undone" in record[0].text
    send(qtbot, window, "How many goats?")
    sent = prompt_text(client)
    assert SUMMARY_OPENS not in sent and "nine goats" in sent  # the model reads them all again


def test_slash_compact_compacts_at_once_and_slash_compact_undo_undoes(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window, client = make_window(
        qtbot,
        tmp_path,
        [final("Noted, goats."), final("Noted, boat."), final(SUMMARY), final("Marisol.")],
    )
    c = window.controller
    box = window.composer.box
    box.setPlainText("/compact")
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert box.toPlainText() == "" and c.doc.compaction() is None  # one exchange: nothing yet
    assert len(client.prompts) == 0
    for fact in FACTS[:2]:
        send(qtbot, window, fact)
    with qtbot.waitSignal(c.compactions.changed, timeout=10_000):
        box.setPlainText("/compact")
        qtbot.keyClick(box, Qt.Key.Key_Return)
    assert box.toPlainText() == "" and len(c.doc.turns) == 2  # nothing was sent as a message
    assert c.doc.compaction() is not None and len(markers(window)) == 1
    box.setPlainText("/compact undo")
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert c.doc.compaction() is None and markers(window)[0].said.text().startswith(
        "Compaction undone"
    )
    send(qtbot, window, "The boat?")
    assert SUMMARY_OPENS not in prompt_text(client)


def test_a_chat_under_summarise_compacts_within_a_turn_at_the_settings_threshold(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    scripts = [final("Noted, goats."), final("Noted, boat."), final(SUMMARY), final("Marisol.")]
    window, client = make_window(qtbot, tmp_path, scripts)
    client.info = ModelInfo("scripted", enc.N_VOCAB, 640, 131072, "gpt-oss", 1, 0.0)
    c = window.controller
    c.max_tokens = 64
    c.set_overflow(Overflow.SUMMARISE)
    for fact in FACTS[:2]:
        send(qtbot, window, fact)
    assert c.doc.compaction() is None and len(client.prompts) == 2  # under 80 %: as it is
    window.settings_watch.update(
        window.settings_watch.settings.model_copy(update={"compact_at_percent": 50})
    )
    assert c.compact_at == 0.5
    said: list[str] = []
    c.notice.connect(said.append)
    send(qtbot, window, "What is the boat called?")
    assert said and said[0].startswith("Compacting: summarising 1 older exchange")
    assert len(client.prompts) == 4  # the summary's generation first, then the answer
    assert "Summarise the conversation above" in prompt_text(client, 2) and SUMMARY in prompt_text(
        client, 3
    )
    reply = c.doc.turns[-1].version.reply
    assert reply is not None and reply.segments[0].data.get("compaction")  # before the answer
    (marker,) = markers(window)
    assert window.transcript.turns[-1].segments[0] is marker and reply.visible_text().endswith(
        "Marisol."
    )
    assert window.status.compacted.isVisible()


def test_exports_carry_the_marker_and_its_summary_and_an_import_puts_it_back(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window, _, _ = compacted_window(qtbot, tmp_path, [])
    doc = window.controller.doc
    md = export(doc, "md")
    assert "*Compacted: " in md and f"> {SUMMARY}" in md
    assert md.index("Noted, budget.") < md.index(f"> {SUMMARY}")  # at its place: after the answer
    data = json.loads(export(doc, "json"))
    listed = data["header"]["harmony_desk"]["compactions"]
    assert [(e["turn"], e["undone"]) for e in listed] == [(2, False)]
    assert listed[0]["compaction"]["summary"] == SUMMARY
    body = json.dumps(data["messages"])
    assert "nine goats" in body  # the conversation before compaction, whole
    back = import_text(export(doc, "json"))
    assert back.compaction() == doc.compaction()
    markers(window)[0].undo.click()
    md = export(doc, "md")
    assert "*Compaction undone: " in md and f"> {SUMMARY}" in md
    assert import_text(export(doc, "ocm")).compaction() is None


def test_a_real_compacted_window_reuses_its_prefix(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    from tests.gui_helpers import real_model_window

    boat = "My boat is called Marisol."
    # seeded: the same answers every run, so whether the summary is shorter is not left to chance
    with real_model_window(qtbot, tmp_path, smollm_model, 16, boat, seed=11) as window:
        c = window.controller
        notices: list[str] = []
        c.notice.connect(notices.append)  # what the status bar is told
        for text in ("My sister keeps nine goats.", "Our budget is 4,200 euros."):
            send(qtbot, window, text, timeout=120_000)
        assert window.status.compact.isEnabled(), notices
        window.status.compact.click()
        qtbot.waitUntil(lambda: not c.busy, timeout=180_000)
        compaction = c.doc.compaction()
        assert compaction is not None and compaction.summary.strip(), notices
        assert markers(window) and c.doc.overflow is Overflow.SUMMARISE
        reused = []
        for text in ("What is my boat called?", "And the goats?"):
            send(qtbot, window, text, timeout=120_000)
            reply = c.doc.turns[-1].version.reply
            assert reply is not None and reply.state in ("done", "incomplete")
            assert SUMMARY_OPENS in window.debug.prompt.toPlainText()  # what the model read
            reused.append(reply.debug.timings.get("prompt_reused", 0))
        assert all(r > 0 for r in reused), reused  # the compacted prefix is reused
        assert reused[-1] > reused[0], reused  # the second turn after it: the summary too


def test_a_real_window_compacts_after_an_answer_and_says_it_in_the_status_bar(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    from tests.gui_helpers import real_model_window

    long = "Remember this, please: {}. " + "It matters for later. " * 10
    facts = ("the boat is called Marisol", "my sister keeps nine goats", "the code is HX-31",
             "the meeting is on Thursday")  # fmt: skip
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=32) as window:
        c = window.controller
        notices: list[str] = []
        c.notice.connect(notices.append)  # what the status bar is told
        for fact in facts:  # summarise is the default: no policy chosen
            send(qtbot, window, long.format(fact), timeout=120_000)
        marked = [t for t in c.doc.turns if t.version.reply and recorded(t.version.reply.segments)]
        assert marked and markers(window), "no compaction was made"
        reply = marked[0].version.reply
        assert reply is not None
        kinds = [s.kind for s in reply.segments]
        notice = next(i for i, s in enumerate(reply.segments) if "compaction" in s.data)
        assert "answer" in kinds[:notice]  # made after that turn's answer, while it was read
        compacting = next(i for i, n in enumerate(notices) if n.startswith("Compacting: "))
        done = [n for n in notices[compacting:] if n.startswith("Compacted: ")]
        assert done and "exchanges summarised" in done[0], notices  # "Compacting…" does not stay
        assert all(t.version.reply.state != "failed" for t in c.doc.turns)  # type: ignore[union-attr]


def test_undo_on_an_earlier_marker_undoes_the_later_ones_that_carry_its_summary(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    later, third = "Goats, a boat, a budget and a cat named Pixel.", "All of it, again."
    more = [final("Noted, cat."), final("Noted, date."), final(later), final(third)]
    window, _, _ = compacted_window(qtbot, tmp_path, more)
    c = window.controller
    first = c.doc.compaction()
    said: list[str] = []
    c.notice.connect(said.append)
    send(qtbot, window, "Remember: the cat is named Pixel. " + "More about the cat. " * 20)
    send(qtbot, window, "Remember: we meet on Thursday. " + "More about the day. " * 20)
    with qtbot.waitSignal(c.compactions.changed, timeout=10_000):
        window.status.compact.click()
    second = c.doc.compaction()
    assert second is not None and second.summary == later and first is not None
    assert second.exchanges > first.exchanges  # it covers more, its summary carried forward
    box = window.composer.box
    box.setPlainText("/compact undo")  # the latest only: the earlier one applies again
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert c.doc.compaction() == first and "An earlier compaction still applies" in said[-1]
    assert [m.applies for m in markers(window)] == [True, False]
    with qtbot.waitSignal(c.compactions.changed, timeout=10_000):
        window.status.compact.click()
    assert [m.applies for m in markers(window)] == [True, False, True]
    markers(window)[0].undo.click()  # the first: the third carries its summary, undone too
    assert c.doc.compaction() is None and [m.applies for m in markers(window)] == [False] * 3
    assert not window.status.compacted.isVisible() and "still applies" not in said[-1]
