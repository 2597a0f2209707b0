"""The window's look: light and dark themes (by choice and following the system), the Settings
dialog built from the settings model, and every control named for assistive technology —
real widgets on the offscreen platform."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from app.ui import appearance, theme
from tests.gui_helpers import real_model_window
from tests.ui.test_window import TURN, make_window, send

CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QListWidget, QPlainTextEdit, QTextEdit)


@pytest.fixture(autouse=True)
def light_again() -> Any:
    yield
    appearance.apply(QApplication.instance(), "light")  # type: ignore[arg-type]


def _fg(widget: QWidget) -> QColor:
    widget.style().polish(widget)
    return widget.palette().color(QPalette.ColorRole.WindowText)


def test_the_theme_switch_repaints_every_widget_with_its_roles(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    appearance.apply(app, "dark")
    assert app.palette().color(QPalette.ColorRole.Window) == QColor(theme.DARK.window)
    theme.mark(window.banner, "error")
    assert _fg(window.banner) == QColor(theme.DARK.error)
    bubble = window.transcript.turns[-1].user
    assert bubble.property("role") == "bubble"
    appearance.apply(app, "light")
    assert app.palette().color(QPalette.ColorRole.Window) == QColor(theme.LIGHT.window)
    assert _fg(window.banner) == QColor(theme.LIGHT.error)


def test_system_follows_the_colour_scheme_while_it_is_chosen(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    """The OS announces its scheme through Qt's `colorSchemeChanged` (the offscreen platform
    cannot switch its own, so the announcement is made here, as the OS makes it)."""
    hints = QGuiApplication.styleHints()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    appearance.follow_system(app)
    appearance.apply(app, "system")
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert theme.current() is theme.DARK
    assert app.palette().color(QPalette.ColorRole.Window) == QColor(theme.DARK.window)
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert theme.current() is theme.LIGHT
    appearance.apply(app, "light")  # chosen: the system no longer decides
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert theme.current() is theme.LIGHT


def test_the_settings_dialog_writes_settings_json_and_applies_at_once(qtbot: Any, qloop: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from PySide6.QtWidgets import QComboBox, QSpinBox

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    window, _ = make_window(qtbot, tmp_path, [])
    dialog = window.show_settings()
    qtbot.addWidget(dialog)
    names = set(dialog.inputs)
    assert {"theme", "font_size", "reasoning_effort", "context_length", "max_tokens", "threads", "gpu_layers",
            "trash_retention_days", "max_downloads"} <= names
    box = dialog.inputs["theme"]
    assert isinstance(box, QComboBox) and [box.itemText(i) for i in range(box.count())] == ["system", "light", "dark"]
    assert "Light or dark" in box.toolTip()  # the model's description
    box.setCurrentText("dark")
    tokens = dialog.inputs["max_tokens"]
    assert isinstance(tokens, QSpinBox)
    tokens.setValue(10**9)  # beyond the model's bound: the box stops there
    assert tokens.value() == 131_072
    tokens.setValue(2048)
    dialog.inputs["reasoning_effort"].setCurrentText("high")  # type: ignore[union-attr]
    assert dialog.data_folder.isReadOnly() and dialog.data_folder.text()
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        dialog.accept()
    saved = json.loads((tmp_path / "config" / "settings.json").read_text())
    assert (saved["theme"], saved["max_tokens"], saved["reasoning_effort"]) == ("dark", 2048, "high")
    assert theme.current() is theme.DARK
    assert window.controller.max_tokens == 2048 and window.composer.effort.currentText() == "high"


def test_a_refused_value_is_named_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.controllers import preferences

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    with pytest.raises(ValueError, match="threads"):
        preferences.save({"threads": -1})
    assert not (tmp_path / "config" / "settings.json").exists()


def test_every_control_has_an_accessible_name(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app.ui.settings.model_settings import ModelSettings

    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    window.set_debug(True, remember=False)
    settings = window.show_settings()
    qtbot.addWidget(settings)
    model = ModelSettings(window.host, window)
    qtbot.addWidget(model)
    mcp = window.show_mcp()
    qtbot.addWidget(mcp)
    unnamed = []
    for root in (window, settings, model, mcp):
        for widget in root.findChildren(QWidget):
            if not isinstance(widget, CONTROLS) or widget.objectName().startswith("qt_"):
                continue  # Qt's own parts (the menu bar's overflow button) name themselves
            if isinstance(widget, QLineEdit) and isinstance(widget.parent(), QAbstractSpinBox | QComboBox):
                continue  # the editor inside a named spin or combo box
            said = QAccessible.queryAccessibleInterface(widget)  # what a screen reader is told
            if said is None or not said.text(QAccessible.Text.Name).strip():
                unnamed.append(f"{type(widget).__name__} in {type(root).__name__}")
    assert unnamed == [], unnamed


def test_copy_regenerate_and_edit_show_on_hover_and_on_focus(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from PySide6.QtWidgets import QGraphicsOpacityEffect

    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    turn = window.transcript.turns[-1]

    def shown(button: QWidget) -> float:
        effect = button.graphicsEffect()
        assert isinstance(effect, QGraphicsOpacityEffect)
        return effect.opacity()

    assert [shown(b) for b in (turn.copy, turn.regenerate, turn.edit_button)] == [0.0, 0.0, 0.0]
    qtbot.mouseMove(turn, turn.rect().center())
    qtbot.waitUntil(lambda: shown(turn.copy) == 1.0, timeout=2000)
    assert shown(turn.regenerate) == 1.0 and shown(turn.edit_button) == 1.0
    qtbot.mouseMove(window.sidebar)
    qtbot.waitUntil(lambda: shown(turn.copy) == 0.0, timeout=2000)
    turn.regenerate.setFocus()  # the keyboard reaches them too
    qtbot.waitUntil(lambda: shown(turn.regenerate) == 1.0, timeout=2000)


def test_a_code_block_has_its_language_and_a_copy_link_that_copies_exactly_it(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import QUrl

    from app.ui.markdown.view import MarkdownView

    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    view = next(w for w in window.transcript.turns[-1].segments if isinstance(w, MarkdownView) and w.code_blocks())
    assert "python · Copy" in view.toPlainText()
    anchors = [a for a in view.toHtml().split('href="')[1:]]
    assert anchors and anchors[0].startswith("copy:0")
    view.anchorClicked.emit(QUrl("copy:0"))  # what clicking the link does
    assert QGuiApplication.clipboard().text() == "print(42)\n"
    block = view.document().findBlockByNumber(0)
    backgrounds = set()
    while block.isValid():
        if "print(42)" in block.text():
            backgrounds.add(block.blockFormat().background().color().name())
        block = block.next()
    assert backgrounds == {QColor(theme.current().code).name()}


def test_the_token_strip_colours_tokens_by_probability_with_alternatives_on_hover(
    qtbot: Any, qloop: Any, tmp_path: Path, tiny_model: Any
) -> None:
    """A real model in the window, the debug pane open: its tokens arrive scored, the strip
    draws one box per token coloured by probability, and hovering says the alternatives."""
    from app.ui.debug.token_strip import mix

    with real_model_window(qtbot, tmp_path, tiny_model, max_tokens=12) as window:
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None and len(reply.debug.token_scores) == reply.debug.timings["generated"]
        strip = window.debug.strip
        qtbot.waitUntil(lambda: len(strip.boxes) == len(reply.debug.token_scores), timeout=5000)
        _token, logprob, top = reply.debug.token_scores[0]
        box = strip.boxes[0]
        image = strip.grab().toImage()
        drawn = image.pixelColor(box.left() + 1, box.top() + 1)
        low, high = theme.current().colour("error"), theme.current().colour("ok")
        import math

        assert drawn == mix(low, high, math.exp(logprob))
        said = strip.tooltip_at(box.center())
        assert f"{math.exp(logprob):.1%}" in said and "alternatives:" in said and len(top) == 5
        window.set_debug(False, remember=False)
        assert strip.scores == [] and window.controller.score_tokens is False


def test_the_header_picks_the_model_from_the_recent_ones_or_a_file(qtbot: Any, qloop: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    window, _ = make_window(qtbot, tmp_path, [])
    picker = window.model_label
    assert picker.text() == "scripted" and picker.currentText() == "scripted"
    for name in ("a.gguf", "b.gguf"):
        window.host.recent.add(str(tmp_path / name))
    picker.refresh()  # what opening the list does first (a popup warns on the offscreen platform)
    items = [picker.itemText(i) for i in range(picker.count())]
    assert items[0] == "scripted" and items[-1] == "Open a model file…"
    assert [i.split(" — ")[0] for i in items[1:-1]] == ["b.gguf", "a.gguf"]  # newest first
    loads: list[str] = []
    opened: list[bool] = []
    picker.load, picker.open_file = loads.append, lambda: opened.append(True)
    picker.activated.emit(1)
    assert loads == [str(tmp_path / "b.gguf")] and picker.currentText() == "scripted"
    picker.activated.emit(picker.count() - 1)
    assert opened == [True]


def test_buttons_carry_bundled_icons_drawn_in_the_theme_colour(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    turn = window.transcript.turns[-1]
    buttons = (window.composer.send, window.sidebar.new, turn.copy, turn.regenerate)
    assert all(not b.icon().isNull() and b.text() for b in buttons)  # an icon adds to the text

    def ink(button: QAbstractButton) -> str:
        """The icon's colour: its commonest opaque pixel (edges are antialiased)."""
        from collections import Counter

        image = button.icon().pixmap(32, 32).toImage()
        seen = Counter(image.pixelColor(x, y).name() for x in range(32) for y in range(32)
                       if image.pixelColor(x, y).alpha() == 255)
        return seen.most_common(1)[0][0]

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    appearance.apply(app, "light")
    assert ink(turn.copy) == QColor(theme.LIGHT.text).name()
    appearance.apply(app, "dark")
    assert ink(turn.copy) == QColor(theme.DARK.text).name()


def test_the_timeline_draws_the_turn_as_it_ran(qtbot: Any, qloop: Any, tmp_path: Path, tiny_model: Any) -> None:
    from app.ui.debug.timeline import speeds

    with real_model_window(qtbot, tmp_path, tiny_model, max_tokens=24) as window:
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None
        debug = reply.debug
        kinds = [k for k, _, _ in debug.spans]
        assert kinds == ["prompt", "decode"] and debug.spans[0][2] == debug.spans[1][1] > 0
        assert debug.token_times == sorted(debug.token_times) and len(debug.token_times) == debug.timings["generated"]
        assert speeds(debug.token_times) and all(s >= 0 for _, s in speeds(debug.token_times))
        timeline = window.debug.timeline
        window.debug.tabs.setCurrentWidget(timeline)
        qtbot.waitUntil(lambda: timeline.spans == debug.spans, timeout=5000)
        box = timeline.rect_of("decode", *debug.spans[1][1:])
        image = timeline.grab().toImage()
        assert image.pixelColor(int(box.center().x()), int(box.center().y())) == theme.current().colour("accent")
        assert timeline.tooltip_at(box.center().toPoint()).startswith("decoding: ")


def test_the_strip_shows_a_remote_answers_tokens_as_text(qtbot: Any) -> None:
    import math

    from app.ui.debug.token_strip import TokenStrip

    strip = TokenStrip(lambda t: str(t))
    qtbot.addWidget(strip)
    strip.resize(400, 100)
    strip.show_text_scores([(" Paris", math.log(0.9), ((" Paris", math.log(0.9)), (" Lyon", math.log(0.05)))),
                            (".", math.log(0.5), ())])
    assert len(strip.boxes) == 2
    said = strip.tooltip_at(strip.boxes[0].center())
    assert "90.0%" in said and "' Lyon' 5.0%" in said


def test_the_tab_order_goes_from_the_conversations_to_the_message_and_send(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    """Tab moves through the window in reading order: the chats, the header, the message box,
    then Send; Tab in the message box moves on rather than typing a tab."""
    window, _ = make_window(qtbot, tmp_path, [])
    order: list[QWidget] = []
    widget = window.sidebar.search
    for _ in range(200):
        if widget in order:
            break
        order.append(widget)
        widget = widget.nextInFocusChain()
    box, send_button = window.composer.box, window.composer.send
    assert window.sidebar.search in order and box in order and send_button in order
    assert order.index(window.sidebar.list) < order.index(window.model_label) < order.index(box) < order.index(send_button)
    assert box.tabChangesFocus()
