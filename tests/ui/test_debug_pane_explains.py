"""L12: the debug pane explains itself — an empty Analysis page says why, llama.cpp's loader
dump is one line that opens, and the timeline's parts are labelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.ui.debug.analysis_note import NO_ANALYSIS_WRITTEN, NONE_THIS_TIME
from app.ui.debug.timeline import TurnTimeline
from tests.gui_helpers import real_model_window
from tests.ui.test_window import make_window, send


def test_a_chat_model_without_reasoning_says_so_and_folds_llama_cpps_log(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=8) as window:
        pane = window.debug
        qtbot.waitUntil(lambda: pane.analysis.placeholderText() != "", timeout=5000)
        assert pane.analysis.toPlainText() == ""  # nothing the model wrote is made up
        assert pane.analysis.placeholderText() == NO_ANALYSIS_WRITTEN

        log = pane.run.log
        pane.tabs.setCurrentWidget(pane.run)
        qtbot.waitUntil(lambda: log.toggle.isVisible(), timeout=5000)
        assert "llama_model_loader" not in pane.events.toPlainText()  # never crowds the rest
        assert log.native.isHidden() and log.toggle.text().startswith("▸ llama.cpp log · ")
        lines = int(log.toggle.text().split("· ")[1].split()[0].replace(",", ""))
        assert lines == log.native.blockCount() - 1 and lines > 20  # the dump, one line
        qtbot.mouseClick(log.toggle, Qt.MouseButton.LeftButton)
        assert log.native.isVisible() and "llama_model_loader" in log.native.toPlainText()
        assert log.toggle.text().startswith("▾ ")
        qtbot.mouseClick(log.toggle, Qt.MouseButton.LeftButton)
        assert log.native.isHidden()

        titles = [w.text() for w in pane.run.findChildren(QLabel)]
        assert any(t.startswith("Timeline") for t in titles) and "Events" in titles
        said = [text for text, _ in pane.timeline.labels()]
        assert any(t.startswith("prompt ") and t.endswith(" ms") for t in said)
        assert any(t.startswith("decoding ") for t in said)


def test_a_harmony_answer_without_analysis_says_it_had_none_and_one_with_it_shows_it(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    thought = "<|channel|>analysis<|message|>Think first.<|end|><|start|>assistant"
    window, _ = make_window(
        qtbot,
        tmp_path,
        [
            "<|channel|>final<|message|>Plain.<|return|>",
            f"{thought}<|channel|>final<|message|>Thought.<|return|>",
        ],
    )
    try:
        window.set_debug(True, remember=False)
        send(qtbot, window, "One")
        pane = window.debug
        qtbot.waitUntil(lambda: pane.analysis.placeholderText() == NONE_THIS_TIME, timeout=5000)
        send(qtbot, window, "Two")
        qtbot.waitUntil(lambda: "Think first." in pane.analysis.toPlainText(), timeout=5000)
        assert pane.analysis.placeholderText() == ""
        assert pane.run.log.toggle.isHidden()  # no llama.cpp lines from a scripted source
    finally:
        window.close()
        window.host.close()


def test_the_timelines_labels_sit_in_or_beside_their_bars_and_never_overlap(qtbot: Any) -> None:
    timeline = TurnTimeline()
    qtbot.addWidget(timeline)
    timeline.resize(320, timeline.height())
    spans = [("prompt", 0.0, 1255.0), ("decode", 1255.0, 4044.0), ("tool clock", 4044.0, 4100.0)]
    timeline.show_turn(spans, [])
    placed = timeline.labels()
    texts = [t for t, _ in placed]
    assert "prompt 1,255 ms" in texts and "decoding 2,789 ms" in texts
    rects = [r for _, r in placed]
    assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1 :])
    assert all(r.right() <= timeline.width() for r in rects)
    timeline.resize(60, timeline.height())  # no room: left out, not drawn over one another
    rects = [r for _, r in timeline.labels()]
    assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1 :])
