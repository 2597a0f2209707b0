"""The debug pane: its page names fit its width, its figures are the status bar's, and its
Prompt page shows every special token of the prompt, highlighted, whatever the template."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from app.domain.figures import Figures
from app.domain.history import Reply
from app.ui import appearance, theme
from app.ui.debug.pane import DebugPane
from app.ui.debug.prompt import highlighted, prompt_runs, show_prompt
from app.ui.debug.timeline import TurnTimeline
from tests.gui_helpers import real_model_window
from tests.ui.test_window import TURN, make_window, send


def reply_shown(window: Any) -> Reply:
    reply = window.controller.doc.turns[-1].version.reply
    assert isinstance(reply, Reply)
    return reply


def test_every_page_name_is_in_view_at_the_default_width_and_at_1100_px(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    window.set_debug(True, remember=False)
    tabs = window.debug.tabs
    bar = tabs.tabBar()
    assert not bar.usesScrollButtons()  # no arrows: a name that does not fit would be elided
    for width in (window.width(), 1100):
        window.resize(width, 760)
        qtbot.waitUntil(lambda wanted=width: window.width() == wanted)
        assert bar.sizeHint().width() <= tabs.width() <= window.debug.width()
        for i in range(tabs.count()):
            shown = bar.tabRect(i)
            assert bar.rect().contains(shown), (width, tabs.tabText(i), shown)
            page = tabs.widget(i)
            assert page is not None and bar.tabText(i) == bar.accessibleTabName(i) == page.accessibleName()
            assert tabs.tabToolTip(i)
    bar.setFocus()  # the keyboard reaches every page
    for i in range(1, tabs.count()):
        qtbot.keyClick(bar, Qt.Key.Key_Right)
        assert tabs.currentIndex() == i
    tabs.setCurrentIndex(0)
    qtbot.keyClick(window.debug.analysis, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert tabs.currentIndex() == 1
    tabs.setCurrentWidget(window.debug.timeline)  # a widget on a page shows its page
    assert tabs.currentWidget() is window.debug.run and window.debug.timeline.isVisible()


def test_the_prompt_shows_harmonys_markers_highlighted_and_a_typed_marker_plain(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "Is <|start|> a marker?")
    window.set_debug(True, remember=False)
    reply = reply_shown(window)
    special = window.controller.special_tokens
    assert special[200006] == b"<|start|>" and special[200008] == b"<|message|>"
    marked = [special[t].decode() for t in reply.debug.prompt_ids if t in special]
    assert {"<|start|>", "<|message|>", "<|end|>"} <= set(marked)
    shown = window.debug.prompt
    assert "".join(highlighted(shown)) == "".join(marked)  # every one, in order, and nothing else
    assert "Is <|start|> a marker?" in shown.toPlainText()  # typed text is never a marker
    assert f"{len(reply.debug.prompt_ids)} prompt tokens · {len(marked)} special" == window.debug.prompt_count.text()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    try:
        appearance.apply(app, "dark")  # the highlight follows the theme
        assert "".join(highlighted(shown)) == "".join(marked)
        fragment = shown.document().begin().begin().fragment()
        assert fragment.charFormat().background().color() == QColor(theme.DARK.special)
    finally:
        appearance.apply(app, "light")


def test_the_prompt_builder_decides_by_id_decodes_runs_whole_and_redacts_them() -> None:
    table = [b"", b"hel", b"lo ", b"\xe2\x82", b"\xac", b"<|", b"im_start", b"|>", b"sk-", b"a" * 20]
    special = {0: b"<|im_start|>"}
    runs = prompt_runs([0, 1, 2, 3, 4, 5, 6, 7, 0, 8, 9, 42], table, special)
    assert runs == [("<|im_start|>", True), ("hello €<|im_start|>", False), ("<|im_start|>", True),
                    ("[redacted]<42>", False)]


def test_a_chatml_models_markers_show_highlighted_and_its_speed_is_the_status_bars(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    """SmolLM2 (ChatML): its markers are control tokens, b"" in the token table — the Prompt
    page spells and highlights them; the pane's tok/s is the status bar's and the footer's."""
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=16) as window:
        reply = reply_shown(window)
        table, special = window.controller.token_table, window.controller.special_tokens
        assert table[1] == table[2] == b"" and special[1] == b"<|im_start|>" and special[2] == b"<|im_end|>"
        marked = [special[t].decode() for t in reply.debug.prompt_ids if t in special]
        assert marked.count("<|im_start|>") >= 2 and "<|im_end|>" in marked
        pane = window.debug
        assert "".join(highlighted(pane.prompt)) == "".join(marked)
        assert "<|im_start|>user\nHi<|im_end|>" in pane.prompt.toPlainText()

        figures = Figures.of(reply.debug.timings, reply.debug.stop_reason, reply.model)
        rate = figures.rate()
        assert rate and window.status.speed.text().startswith(rate)  # the status bar's number
        pane.tabs.setCurrentWidget(pane.run)
        qtbot.waitUntil(lambda: pane.timeline.average() == f"average {rate}", timeout=5000)
        assert f">Speed</td><td>{rate}</td>" in pane.details.text()
        assert pane.timeline.peak().startswith("peak ")  # a peak, if any, is said apart
        assert rate in pane.timeline.accessibleDescription()
        said = pane.timeline.tooltip_at(QPoint(pane.timeline.width() // 2, 20))
        assert "peak" in said and f"average {rate}" in said


def test_the_timeline_says_the_answers_average_apart_from_the_peak(qtbot: Any) -> None:
    timeline = TurnTimeline()
    qtbot.addWidget(timeline)
    timeline.resize(300, timeline.height())
    times = [100.0 + i * 5 for i in range(10)] + [200.0 + i * 40 for i in range(10)]  # a burst, then slow
    figures = Figures.of({"tokens_per_s": 55.0, "first_token_ms": 100.0}, "stop")
    timeline.show_turn([("prompt", 0.0, 100.0), ("decode", 100.0, 560.0)], times, figures)
    assert timeline.average() == "average 55.0 tok/s" and figures.speed().startswith("55.0 tok/s")
    peak = float(timeline.peak().split()[1])
    assert peak > 100  # the instant's burst, labelled as such
    image = timeline.grab().toImage()
    assert image.width() == 300


def test_figures_rows_say_each_measured_figure_once() -> None:
    timings = {"tokens_per_s": 41.96, "generated": 128, "prompt_tokens": 300, "first_token_ms": 180.4,
               "prompt_evaluated": 20, "prompt_reused": 280, "total_ms": 3200.0}
    figures = Figures.of(timings, "stop", "SmolLM2")
    assert figures.rows() == [
        ("Model", "SmolLM2"), ("Speed", "42.0 tok/s"), ("Generated", "128 tokens"), ("First token", "180 ms"),
        ("Prompt", "300 tokens (20 evaluated, 280 from the cache)"), ("Took", "3,200 ms"), ("Stopped", "finished"),
    ]
    assert Figures.of({}).rows() == [] and Figures.of({}).rate() == ""


def test_the_strip_marks_special_tokens_by_id(qtbot: Any) -> None:
    pane = DebugPane()
    qtbot.addWidget(pane)
    pane.token_table = [b"", b"<|fake|>", b"hi"]
    pane.special_tokens = {0: b"<|im_end|>"}
    pane.strip.resize(300, 100)
    pane.strip.show_scores([(2, math.log(0.9), ()), (1, math.log(0.5), ()), (0, math.log(0.99), ())])
    assert [s[0] for s in pane.strip.scores] == ["hi", "<|fake|>", "<|im_end|>"]
    assert pane.strip.marked == [False, False, True]  # by id: text shaped like a marker is text


def test_a_prompt_box_highlights_nothing_but_its_special_runs(qtbot: Any) -> None:
    pane = DebugPane()
    qtbot.addWidget(pane)
    show_prompt(pane.prompt, [("<|im_start|>", True), ("user\n<|x|>", False), ("<|im_end|>", True)])
    assert highlighted(pane.prompt) == ["<|im_start|>", "<|im_end|>"]


def test_the_run_page_says_what_speculative_decoding_drafted_only_when_it_drafted(qtbot: Any) -> None:
    from app.domain.events import FinishReason, GenerationDone, Timings
    from app.domain.reply.debug import DebugLog
    from app.ui.debug.run import RunPage

    page = RunPage()
    qtbot.addWidget(page)
    reply = Reply()
    timings = Timings(prompt_tokens=40, prompt_evaluated=40, first_token_ms=50.0, total_ms=550.0, generated=60)
    DebugLog(reply).generated(GenerationDone(FinishReason.STOP, None, timings))
    page.show_reply(reply)
    assert "Speculative" not in page.details.text() and "drafted" not in page.details.text()
    assert "drafted" not in reply.debug.timings  # nothing drafted: nothing recorded, no made-up zero
    drafting = Reply()
    DebugLog(drafting).generated(GenerationDone(FinishReason.STOP, None, dataclasses.replace(timings, drafted=12, accepted=9)))
    page.show_reply(drafting)
    assert ">Speculative</td><td>12 drafted, 9 accepted</td>" in page.details.text()
    assert ("Speculative", "12 drafted, 9 accepted") in Figures.of(drafting.debug.timings).rows()
