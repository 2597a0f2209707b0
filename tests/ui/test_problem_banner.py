"""The problem banner: one sentence, the technical details behind a disclosure, a close button."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from app.ui.problem_banner import ProblemBanner


def _banner(qtbot: Any) -> tuple[QWidget, ProblemBanner]:
    parent = QWidget()
    qtbot.addWidget(parent)
    banner = ProblemBanner(parent)
    parent.show()
    return parent, banner


def test_it_starts_hidden_and_shows_one_sentence(qtbot: Any) -> None:
    _, banner = _banner(qtbot)
    assert not banner.isVisible()
    banner.show_problem("The model “x.zip” is not a GGUF model file.")
    assert banner.isVisible() and banner.text() == "The model “x.zip” is not a GGUF model file."
    assert banner.label.objectName() == "errorBanner" and banner.label.accessibleName() == "Problem"
    assert banner.label.property("role") == "error" and banner.label.wordWrap()
    assert not banner.details_button.isVisible() and banner.details() == ""  # no details: no button
    assert banner.close_button.isVisible() and banner.close_button.accessibleName() == "Dismiss"


def test_the_details_disclosure_toggles_selectable_read_only_text(qtbot: Any) -> None:
    _, banner = _banner(qtbot)
    banner.show_problem("Cannot load the model “x.zip”.", "It starts with 50 4B 03 04 (“PK..”).\n")
    assert banner.details() == "It starts with 50 4B 03 04 (“PK..”)."
    assert banner.details_button.isVisible() and not banner.details_view.isVisible()
    qtbot.mouseClick(banner.details_button, Qt.MouseButton.LeftButton)
    assert banner.details_view.isVisible() and banner.details_view.isReadOnly()
    assert banner.details_view.toPlainText() == banner.details()
    assert banner.details_view.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    qtbot.mouseClick(banner.details_button, Qt.MouseButton.LeftButton)
    assert not banner.details_view.isVisible()
    qtbot.mouseClick(banner.details_button, Qt.MouseButton.LeftButton)
    banner.show_problem("Another problem.")  # a new problem: its own details (none), folded
    assert not banner.details_view.isVisible() and not banner.details_button.isVisible()
    assert banner.text() == "Another problem."


def test_dismiss_hides_it(qtbot: Any) -> None:
    _, banner = _banner(qtbot)
    banner.show_problem("The MCP server “git” could not start.", "stderr tail")
    with qtbot.waitSignal(banner.dismissed, timeout=1000):
        qtbot.mouseClick(banner.close_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible()
    banner.show_problem("Again.")
    assert banner.isVisible()
    banner.dismiss()
    assert not banner.isVisible()


def test_text_is_plain_never_markup(qtbot: Any) -> None:
    _, banner = _banner(qtbot)
    banner.show_problem("Cannot load “<b>bold</b>.gguf”.")
    assert banner.label.textFormat() == Qt.TextFormat.PlainText
