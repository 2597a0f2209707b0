"""A long pasted message is folded in the transcript (review L11: "a 9 KB pasted message is shown
in full; ChatGPT folds long pastes"): offscreen on the real window and a scripted model, a
200-line paste shows its start and "Show all", which shows it whole and becomes "Show less";
what was sent and what Edit opens stay whole; a short message has no button."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.ui.transcript.user_message import FOLD_CHARS, FOLD_LINES, SHOWN_LINES
from tests.ui.test_window import TURN, make_window, send

PASTE = "\n".join(f"line {n:03}: a log line the user pasted, long enough to matter" for n in range(200))


def test_a_long_paste_folds_and_shows_all_on_request(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    assert len(PASTE) > FOLD_CHARS and PASTE.count("\n") + 1 > FOLD_LINES
    window, client = make_window(qtbot, tmp_path, [TURN, TURN])
    window.resize(1100, 760)
    send(qtbot, window, PASTE)
    turn = window.transcript.turns[-1]
    bubble, toggle = turn.user, turn.user.toggle
    qtbot.waitUntil(lambda: toggle.isVisible(), timeout=3000)
    assert toggle.text() == "Show all" and "200 lines" in toggle.accessibleName()
    shown = bubble.text()
    assert shown.startswith("line 000") and shown.endswith("…") and "line 199" not in shown
    assert shown.count("\n") + 1 <= SHOWN_LINES
    folded_height = bubble.sizeHint().height()
    line = bubble.fontMetrics().lineSpacing()
    assert folded_height < line * (SHOWN_LINES + 4)  # a dozen lines tall, not two hundred
    # what was sent, and saved, is the whole paste
    assert window.controller.doc.turns[-1].version.user_text == PASTE
    assert "line 199" in client.encoding.decode(client.prompts[0])
    toggle.click()
    assert bubble.text() == PASTE and toggle.text() == "Show less" and toggle.isVisible()
    assert bubble.sizeHint().height() > line * 150  # the whole message, every line
    toggle.click()
    assert bubble.text() == shown and toggle.text() == "Show all"
    turn.edit_button.click()  # Edit opens the whole message; neither bubble nor button shows
    assert turn.editor.toPlainText() == PASTE and not bubble.isVisible() and not toggle.isVisible()
    turn.cancel.click()
    assert bubble.isVisible() and toggle.isVisible() and bubble.text() == shown
    send(qtbot, window, "A short question?")
    short = window.transcript.turns[-1]
    assert short.user.text() == "A short question?" and not short.user.toggle.isVisible()
