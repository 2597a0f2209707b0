"""The context never dead-ends (the newcomer review's H2 and L3): attaching a long text leaves
room for the answer and a follow-up; after "Raise the context" the count is the loaded
context's; a message that cannot fit offers ways on that work (compact, a new chat), and a way
that cannot work is shown disabled with its reason in words. Real widgets offscreen, the real
controllers, the scripted model (the raise: the real SmolLM2 model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.controllers.attachments import FOLLOW_UP
from app.controllers.fit import Fit
from app.domain.budget import Overflow
from app.store.history import HistoryStore
from app.ui.window.main_window import MainWindow
from tests.ui.test_window import make_window, send

SHORT = "<|channel|>final<|message|>Done.<|return|>"
LONG = "<|channel|>final<|message|>" + "The valve held. " * 150 + "<|return|>"  # ~600 tokens
LINE = "Line {n} of a long log file: the pump ran at {n} rpm and the valve held its pressure.\n"


def _window(qtbot: Any, tmp_path: Path, scripts: list[str]) -> MainWindow:
    """A window on the scripted model whose chats stop when full (the settings' policy)."""
    store = HistoryStore(tmp_path / "h.db")
    window, _ = make_window(qtbot, tmp_path, scripts, store=store)
    window.controller.overflow = Overflow.STOP  # nothing left out on its own: the user chooses
    return window


def _count(qtbot: Any, window: MainWindow, text: str) -> Fit:
    """The composer's count of `text` in the open chat, as it shows it."""
    counted: list[Fit | None] = []
    future = window.composer.count.count_now(text)
    future.add_done_callback(lambda f: counted.append(f.result()))
    qtbot.waitUntil(lambda: bool(counted), timeout=10_000)
    fit = counted[0]
    assert fit is not None and not fit.estimated
    return fit


def test_an_attached_long_text_leaves_room_for_a_follow_up(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARMONY_DESK_CACHE", str(tmp_path / "cache"))
    window = _window(qtbot, tmp_path, [LONG, SHORT])  # a long answer stays in the history
    log = tmp_path / "pump.log"
    log.write_text("".join(LINE.format(n=n) for n in range(4_000)), encoding="utf-8")
    window.composer.add_files([log])
    send(qtbot, window, "When did the valve hold its pressure?", timeout=60_000)
    qtbot.waitUntil(window.sending.done, timeout=10_000)
    sent = window.controller.doc.turns[-1].version.user_text
    assert "passages of" in window.statusBar().currentMessage() and "[1] pump.log" in sent
    follow_up = _count(qtbot, window, "And which rpm was the highest?")
    reserve = window.controller.max_tokens
    assert follow_up.fits and follow_up.room >= FOLLOW_UP
    assert follow_up.room < 2 * (FOLLOW_UP + reserve)  # the documents took the rest
    send(qtbot, window, "And which rpm was the highest?")
    assert window.controller.doc.turns[-1].version.reply.state == "done"


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def _offered(qtbot: Any, window: MainWindow, text: str) -> None:
    """Send `text`, which cannot fit: the offer shows instead."""
    window.composer.box.setPlainText(text)
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    qtbot.waitUntil(window.composer.offer.isVisible, timeout=10_000)


def _fits_then_sends(qtbot: Any, window: MainWindow, text: str) -> None:
    """Once the count (taken again) says `text` fits, Enter sends it and it is answered."""
    count = window.composer.count
    qtbot.waitUntil(lambda: count.fit is not None and count.fit.fits, timeout=10_000)
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    assert not window.composer.offer.isVisible()
    assert window.controller.doc.turns[-1].version.user_text == text


def test_compact_now_is_a_way_on_that_works(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    scripts = [final("Noted.")] * 3 + [final("The user told three long stories."), SHORT]
    window = _window(qtbot, tmp_path, scripts)
    for n in range(3):
        send(qtbot, window, f"Story {n}. " + "More about the goats. " * 360)  # ~1,800 tokens
    question = "Now the question. " + "More about the boat. " * 400  # ~2,000 tokens
    _offered(qtbot, window, question)
    offer, chat = window.composer.offer, window.controller
    assert offer.compact.isEnabled() and not offer.compact.isHidden()
    assert offer.minimumSizeHint().width() < 600  # all five ways fit a 640-pixel window
    assert not offer.new_chat.isHidden()
    with qtbot.waitSignal(chat.compactions.changed, timeout=10_000):
        offer.compact.click()
    assert chat.compactions.latest() is not None
    _fits_then_sends(qtbot, window, question)
    assert chat.doc.turns[-1].version.reply.state == "done" and len(chat.doc.turns) == 4


def test_a_new_chat_is_a_way_on_that_works(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [final("Noted."), SHORT])
    send(qtbot, window, "A long story. " + "More about the goats. " * 1_200)  # ~6,000 tokens
    first = window.controller.doc.id
    question = "Another matter. " + "More about the boat. " * 400  # ~2,000 tokens
    _offered(qtbot, window, question)
    offer = window.composer.offer
    assert not offer.compact.isEnabled() and "Compact now: " in offer.why.text()  # one exchange
    offer.new_chat.click()
    assert window.controller.doc.id != first and not window.controller.doc.turns
    assert window.composer.box.toPlainText() == question
    _fits_then_sends(qtbot, window, question)
    assert len(window.controller.doc.turns) == 1


@pytest.mark.parametrize("look", ["light", "dark"])
def test_a_way_that_cannot_work_is_visibly_disabled_with_its_reason(
    qtbot: Any, qloop: Any, tmp_path: Path, look: str
) -> None:
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QApplication

    from app.ui import appearance

    theme = appearance.apply(QApplication.instance(), look)  # type: ignore[arg-type]
    try:
        window = _window(qtbot, tmp_path, [])
        offer = window.composer.offer
        offer.offer(Fit(9_000, 2_900, 4_096, 8_192, False, 1_024), pasted=True)
        assert offer.larger.text() == "Raise the context" and not offer.larger.isEnabled()
        assert offer.why.isVisible() and "trained for 8,192 tokens" in offer.why.text()
        assert offer.attach.isEnabled() and offer.cancel.isEnabled()
        disabled = offer.larger.grab().toImage()
        offer.offer(Fit(9_000, 2_900, 4_096, 16_384, False, 1_024), pasted=True)
        assert offer.larger.isEnabled() and offer.larger.text() == "Raise the context to 12,288"
        assert not offer.why.isVisible()
        offer.larger.setText("Raise the context")  # the same words: only the look may differ
        assert offer.larger.grab().toImage() != disabled
        shown = offer.larger.palette().color(offer.larger.foregroundRole())
        assert shown == QColor(theme.text)  # enabled: the text colour; disabled: muted
    finally:
        appearance.apply(QApplication.instance(), "light")  # type: ignore[arg-type]


def test_a_full_chat_does_not_offer_attaching(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [])
    offer = window.composer.offer
    offer.offer(Fit(40, 0, 4_096, 8_192, False, 1_024), pasted=False)
    assert not offer.attach.isEnabled() and "no room left for documents" in offer.why.text()


def test_after_raising_the_context_the_count_is_the_loaded_context_s(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    window = _window(qtbot, tmp_path, [])
    host, chat = window.host, window.controller
    with qtbot.waitSignal(host.loaded, timeout=120_000):
        window.load_model(str(smollm_model), n_ctx=2_048)
    chat.max_tokens = 512
    question = "Summarise: " + "the pump ran and the valve held. " * 220  # ~1,700 tokens
    _offered(qtbot, window, question)
    offer = window.composer.offer
    assert offer.larger.isEnabled() and offer.larger.text() == "Raise the context to 4,096"
    with qtbot.waitSignal(host.loaded, timeout=120_000):
        offer.larger.click()
    assert host.n_ctx == 4_096 and "4,096-token context" in window.statusBar().currentMessage()
    count = window.composer.count
    qtbot.waitUntil(lambda: count.fit is not None, timeout=10_000)
    assert count.fit is not None and count.fit.n_ctx == 4_096 and count.fit.fits
    with qtbot.waitSignal(chat.replyStarted, timeout=10_000):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)  # sent, not offered again
    assert not offer.isVisible() and chat.doc.turns[-1].version.user_text == question
    with qtbot.waitSignal(chat.replyFinished, timeout=120_000):
        chat.stop_shown()
