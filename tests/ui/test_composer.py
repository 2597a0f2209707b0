"""The composer as one rounded field: its controls inside it, only what the model has, Tools
saying how many are on with a menu that stays open while ticking, file chips with their ×,
a box that grows with its text, Send/Stop in one place, and Offline/Library reaching the
conversation — real widgets on the offscreen platform."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QMenu, QVBoxLayout, QWidget

from app.ui.composer.composer import Composer
from app.ui.composer.field import StayOpenMenu
from app.ui.composer.message_box import MAX_LINES, MIN_LINES
from tests.ui.test_window import make_window

POPUP = pytest.mark.qt_log_ignore("This plugin does not support grabbing")  # offscreen menus


@pytest.fixture
def composer(qtbot: Any, qloop: Any) -> Iterator[Composer]:
    """A composer alone in a shown window (its message counted on the test's asyncio loop)."""
    host = QWidget()
    qtbot.addWidget(host)
    host.resize(760, 420)
    layout = QVBoxLayout(host)
    layout.addStretch(1)
    shown = Composer(host)
    layout.addWidget(shown)
    host.show()
    qtbot.waitExposed(host)
    yield shown
    host.close()


def ancestors(widget: QWidget) -> list[QWidget]:
    found, parent = [], widget.parentWidget()
    while parent is not None:
        found.append(parent)
        parent = parent.parentWidget()
    return found


def popup(qtbot: Any) -> QMenu:
    """The menu a button just opened."""
    qtbot.waitUntil(lambda: isinstance(QApplication.activePopupWidget(), QMenu))
    menu = QApplication.activePopupWidget()
    assert isinstance(menu, QMenu)
    return menu


def action_named(menu: QMenu, text: str) -> QAction:
    return next(a for a in menu.actions() if a.text().startswith(text))


def click(qtbot: Any, menu: QMenu, action: QAction) -> None:
    qtbot.mouseClick(menu, Qt.MouseButton.LeftButton, pos=menu.actionGeometry(action).center())


def test_every_control_sits_inside_the_rounded_field(qtbot: Any, composer: Composer) -> None:
    field = composer.field
    assert field.property("role") == "composer"
    composer.add_files([Path("/notes/a.md"), Path("/notes/b.pdf")])
    inside = (composer.box, composer.attach, composer.tools_button, composer.json_mode, composer.effort,
              field.more, composer.count, composer.send, composer.attachments, composer.detach)
    assert all(field in ancestors(w) for w in inside)
    assert field not in ancestors(composer.schema) and field not in ancestors(composer.picker)
    assert field not in ancestors(composer.offer)  # above the field, as the "@" picker is
    attach, send = composer.attach.geometry(), composer.send.geometry()
    assert attach.top() > composer.box.geometry().top() and send.top() > composer.box.geometry().top()
    assert send.left() > composer.count.geometry().left() > attach.left()  # Send at the right


def test_the_composer_at_rest_is_small(qtbot: Any, composer: Composer) -> None:
    composer.box.setPlainText("One line")
    qtbot.waitUntil(lambda: composer.box.height() == composer.box.height_for(MIN_LINES))
    assert 60 <= composer.sizeHint().height() <= 110
    assert not composer.attachments.isVisible() and not composer.schema.isVisible()


def test_only_what_the_model_has_is_offered(qtbot: Any, composer: Composer) -> None:
    composer.set_features(tools=True, effort=False)
    assert not composer.effort.isVisible() and not composer.effort_label.isVisible()
    assert composer.tools_button.isEnabled()
    composer.set_features(tools=True, effort=True)
    assert composer.effort.isVisible() and composer.field in ancestors(composer.effort)
    composer.effort.setCurrentText("high")
    assert composer.effort_value() == "high"
    composer.set_features(tools=False, effort=False)  # a model without either
    assert not composer.effort.isVisible() and composer.effort_value() is None
    assert not composer.tools_button.isEnabled() and "no tool-call format" in composer.tools_button.toolTip()


@POPUP
def test_the_tools_menu_stays_open_while_ticking_and_the_button_counts(qtbot: Any, qloop: Any,
                                                                      tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    button, controller = window.composer.tools_button, window.controller
    assert button.text() == "Tools" and controller.doc.tools == ()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    menu = popup(qtbot)
    assert isinstance(menu, StayOpenMenu)
    assert menu.geometry().bottom() <= button.mapToGlobal(button.rect().topLeft()).y() + 1  # above it
    required = action_named(menu, "Require a tool call")
    assert not required.isEnabled()  # no tool on yet
    click(qtbot, menu, action_named(menu, "python"))  # the mouse ticks one
    assert menu.isVisible() and controller.doc.tools == ("python",) and button.text() == "Tools · 1"
    assert required.isEnabled()
    menu.setActiveAction(action_named(menu, "browser"))
    qtbot.keyClick(menu, Qt.Key.Key_Return)  # the keyboard ticks another
    assert menu.isVisible() and controller.doc.tools == ("python", "browser") and button.text() == "Tools · 2"
    qtbot.keyClick(menu, Qt.Key.Key_Space)  # and unticks it
    assert menu.isVisible() and controller.doc.tools == ("python",) and button.text() == "Tools · 1"
    click(qtbot, menu, required)
    assert menu.isVisible() and controller.tool_choice == "required"
    qtbot.keyClick(menu, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None)
    qtbot.keyClick(window.composer.box, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert controller.doc.tools == () and button.text() == "Tools"  # another conversation's count


def test_attached_files_are_chips_each_removed_by_its_cross(qtbot: Any, composer: Composer) -> None:
    a, b, c = Path("/notes/a.md"), Path("/notes/b.pdf"), Path("/notes/c.txt")
    composer.add_files([a, b])
    composer.add_files([b, c])  # each once
    chips = composer.attachments
    assert composer.files == [a, b, c] and chips.isVisible() and len(chips.chips) == 3
    assert chips.text() == "📎 a.md  📎 b.pdf  📎 c.txt" and composer.detach.isVisible()
    assert chips.geometry().bottom() < composer.box.geometry().top()  # the chips sit above the box
    qtbot.mouseClick(chips.chip_of(b).remove, Qt.MouseButton.LeftButton)
    assert composer.files == [a, c] and [p.name for p in chips.files] == ["a.md", "c.txt"]
    qtbot.mouseClick(chips.chip_of(a).remove, Qt.MouseButton.LeftButton)
    assert composer.files == [c] and not composer.detach.isVisible()  # one file: its × alone
    qtbot.mouseClick(chips.chip_of(c).remove, Qt.MouseButton.LeftButton)
    assert composer.files == [] and not chips.isVisible()
    composer.add_files([a, b])
    qtbot.mouseClick(composer.detach, Qt.MouseButton.LeftButton)  # Remove all
    assert composer.files == [] and not chips.isVisible() and composer.take_files() == []


def test_the_box_grows_with_its_text_up_to_its_cap(qtbot: Any, composer: Composer) -> None:
    box = composer.box
    rest = box.height_for(MIN_LINES)
    assert box.height() == rest
    box.setPlainText("one\ntwo\nthree\nfour")
    qtbot.waitUntil(lambda: box.height() == box.height_for(4))
    assert box.height() > rest and box.verticalScrollBar().maximum() == 0
    box.setPlainText("\n".join(f"line {n}" for n in range(30)))
    qtbot.waitUntil(lambda: box.height() == box.height_for(MAX_LINES))
    assert box.verticalScrollBar().maximum() > 0  # beyond the cap it scrolls
    box.clear()
    qtbot.waitUntil(lambda: box.height() == rest)


def test_send_and_stop_are_one_button_in_one_place(qtbot: Any, composer: Composer) -> None:
    send = composer.send
    assert (send.text(), send.property("role"), send.accessibleName()) == ("Send", "primary", "Send the message")
    right = send.geometry().right()
    composer.box.setPlainText("Hello")
    with qtbot.waitSignal(composer.submitted, timeout=2000):
        qtbot.mouseClick(send, Qt.MouseButton.LeftButton)
    composer.set_busy(True)  # this chat's answer streams
    qtbot.waitUntil(lambda: send.geometry().right() == right)  # the same place
    assert (send.text(), send.property("role"), send.accessibleName()) == ("Stop", "stop", "Stop the answer")
    assert "Esc" in send.toolTip() and not send.icon().isNull()
    with qtbot.waitSignal(composer.stopRequested, timeout=2000):
        qtbot.mouseClick(send, Qt.MouseButton.LeftButton)
    composer.set_busy(True, "Lighthouse")  # another chat's answer streams: never its Stop
    qtbot.waitUntil(lambda: send.geometry().right() == right)
    assert (send.text(), send.property("role"), send.accessibleName()) == ("Queue", "primary", "Queue the message")
    assert "“Lighthouse”" in send.toolTip() and "“Lighthouse”" in composer.box.placeholderText()
    with qtbot.assertNotEmitted(composer.stopRequested), qtbot.waitSignal(composer.submitted, timeout=2000):
        qtbot.mouseClick(send, Qt.MouseButton.LeftButton)
    composer.set_busy(False)
    assert send.text() == "Send" and send.property("role") == "primary"


def test_json_mode_is_a_toggle_in_the_field_with_the_schema_above(qtbot: Any, composer: Composer) -> None:
    assert composer.json_mode.isCheckable() and not composer.schema.isVisible()
    qtbot.mouseClick(composer.json_mode, Qt.MouseButton.LeftButton)
    assert composer.json_mode.isChecked() and composer.schema.isVisible()
    assert composer.schema_state.text() == "✓ schema is valid"
    qtbot.waitUntil(lambda: composer.schema.geometry().bottom() < composer.field.geometry().top())
    qtbot.mouseClick(composer.json_mode, Qt.MouseButton.LeftButton)
    assert not composer.schema.isVisible()


@POPUP
def test_offline_and_library_in_the_more_menu_reach_the_conversation(qtbot: Any, qloop: Any,
                                                                     tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    composer, doc = window.composer, window.controller.doc
    more = composer.field.more
    assert more.text() == "" and not doc.offline and not doc.library
    qtbot.mouseClick(more, Qt.MouseButton.LeftButton)
    menu = popup(qtbot)
    click(qtbot, menu, composer.offline)
    assert menu.isVisible() and doc.offline and composer.offline.isChecked()
    menu.setActiveAction(composer.library)
    qtbot.keyClick(menu, Qt.Key.Key_Return)
    assert menu.isVisible() and doc.library and more.text() == "Offline · Library"
    qtbot.keyClick(menu, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None)
    composer.offline.setChecked(False)  # what tests and the window do directly
    assert not doc.offline and more.text() == "Library"
    qtbot.keyClick(composer.box, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert not composer.library.isChecked() and more.text() == ""  # the new chat's own


def test_tab_goes_from_the_message_to_send_then_the_small_controls(qtbot: Any, composer: Composer) -> None:
    order: list[QWidget] = []
    widget: QWidget = composer.box
    while widget not in order:
        order.append(widget)
        widget = widget.nextInFocusChain()
    field = composer.field
    wanted = [composer.box, composer.send, composer.attach, composer.tools_button, composer.json_mode,
              composer.effort, field.more]
    assert [w for w in order if w in wanted] == wanted


@POPUP
def test_an_item_that_is_not_a_tick_closes_the_tools_menu_and_acts(qtbot: Any, qloop: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from app.controllers.chat import PluginIdentity
    from app.ui.composer import tools_menu

    window, _ = make_window(qtbot, tmp_path, [])
    found = PluginIdentity("dice", "folder", str(tmp_path / "dice"), "0" * 64)
    monkeypatch.setattr(window.controller.tools, "pending", lambda: {"dice": found})
    asked: list[str] = []
    monkeypatch.setattr(tools_menu, "ask_trust", lambda parent, controller, identity: asked.append(identity.name))
    qtbot.mouseClick(window.composer.tools_button, Qt.MouseButton.LeftButton)
    menu = popup(qtbot)
    click(qtbot, menu, action_named(menu, "Trust plugin dice"))
    qtbot.waitUntil(lambda: asked == ["dice"])  # asked once the menu has gone
    assert QApplication.activePopupWidget() is None and window.controller.doc.tools == ()


def test_a_hidden_composer_counts_nothing_until_it_is_shown_again(qtbot: Any, composer: Composer) -> None:
    from app.ui.composer.fit_bar import PAUSE_MS

    host = composer.parentWidget()
    assert host is not None
    composer.box.setPlainText("a message typed just before the window closed")
    host.hide()  # within the pause: its count would have needed a loop nobody runs
    qtbot.wait(PAUSE_MS * 2)
    assert composer.count.text() == "" and composer.count.fit is None
    host.show()
    qtbot.waitUntil(lambda: "tokens" in composer.count.text(), timeout=5_000)
    assert composer.count.current_for(composer.box.toPlainText())
