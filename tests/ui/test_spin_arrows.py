"""Spin boxes show their up and down arrows in both themes (review L4: "the spin boxes' up/down
arrows are not drawn (just a line)"): the real Settings dialog's spin boxes, painted offscreen
under the app's stylesheet, carry an arrow in the text colour in each of their two buttons, and
the arrow that cannot step further (the value at its end) is drawn muted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QSpinBox, QStyle, QStyleOptionSpinBox

from app.ui import appearance
from app.ui.theme import DARK, LIGHT, Theme


@pytest.fixture(autouse=True)
def light_again() -> Any:
    yield
    appearance.apply(QApplication.instance(), "light")  # type: ignore[arg-type]


def button_rect(box: QAbstractSpinBox, which: QStyle.SubControl) -> QRect:
    option = QStyleOptionSpinBox()
    option.initFrom(box)
    option.subControls = QStyle.SubControl.SC_All
    option.buttonSymbols = box.buttonSymbols()
    option.stepEnabled = QAbstractSpinBox.StepEnabledFlag.StepUpEnabled | QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
    return box.style().subControlRect(QStyle.ComplexControl.CC_SpinBox, option, which, box)


def near(colour: QColor, wanted: QColor, slack: int = 40) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(colour.getRgb()[:3], wanted.getRgb()[:3], strict=True))


def pixels_like(image: QImage, rect: QRect, wanted: QColor, slack: int = 24) -> int:
    return sum(near(image.pixelColor(x, y), wanted, slack) for x in range(rect.left(), rect.right() + 1)
               for y in range(rect.top(), rect.bottom() + 1))


@pytest.mark.parametrize("chosen", [LIGHT, DARK], ids=["light", "dark"])
def test_the_settings_spin_boxes_draw_both_arrows(qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   chosen: Theme) -> None:
    from app.ui.settings.dialog import SettingsDialog

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    appearance.apply(QApplication.instance(), chosen.name)  # type: ignore[arg-type]
    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    boxes = [b for b in dialog.findChildren(QSpinBox) if b.isVisibleTo(dialog)]
    assert boxes, "the Settings dialog has spin boxes"
    box = boxes[0]
    dialog.stack.setCurrentWidget(next(p for p in (dialog.stack.widget(i) for i in range(dialog.stack.count()))
                                       if p.isAncestorOf(box)))
    qtbot.waitExposed(dialog)
    box.setValue((box.minimum() + box.maximum()) // 2)  # both ways open
    text, background = QColor(chosen.text), QColor(chosen.surface)
    image = box.grab().toImage()
    for way, which in (("up", QStyle.SubControl.SC_SpinBoxUp), ("down", QStyle.SubControl.SC_SpinBoxDown)):
        rect = button_rect(box, which)
        assert rect.width() >= 12 and rect.height() >= 6, rect  # a button one can hit
        assert box.lineEdit().geometry().right() <= rect.left()  # the number never runs under it
        assert pixels_like(image, rect, text) >= 6, (way, chosen.name)  # its arrow, in the text colour
        assert pixels_like(image, rect, background) > 0  # on the box's own background
    box.setValue(box.maximum())  # up cannot step: its arrow is muted, down's is not
    image = box.grab().toImage()
    up, down = (button_rect(box, w) for w in (QStyle.SubControl.SC_SpinBoxUp, QStyle.SubControl.SC_SpinBoxDown))
    muted = QColor(chosen.muted)
    assert pixels_like(image, up, text, 12) == 0 and pixels_like(image, up, muted, 12) >= 4
    assert pixels_like(image, down, text, 12) >= 4
