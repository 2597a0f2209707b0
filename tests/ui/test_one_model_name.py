"""L1 and L2 on the real SmolLM2: one readable model name in the picker, the answer's footer
and the status bar; the footer shown whole wherever it has the room."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.gui_helpers import real_model_window

SMOL = "SmolLM2 135M Instruct · Q4_1"


def test_the_picker_the_footer_and_the_status_bar_say_one_readable_name(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=8) as window:
        picker = window.header.picker
        assert picker.currentText() == SMOL
        footer = window.transcript.turns[-1].footer
        qtbot.waitUntil(lambda: footer.text() != "", timeout=5000)
        assert footer.text().startswith(f"{SMOL} · ")
        assert window.status.model.text().startswith(f"{SMOL} · on ")
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None and reply.model == SMOL  # what the reply keeps, the same
        for said in (picker.currentText(), footer.text(), window.status.model.text()):
            assert ".gguf" not in said and "template" not in said and "type " not in said


def test_the_footer_is_whole_where_it_has_room_and_elided_only_where_it_has_not(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=8) as window:
        window.resize(1600, 1000)
        turn = window.transcript.turns[-1]
        footer = turn.footer
        qtbot.waitUntil(lambda: footer.text() != "", timeout=5000)
        qtbot.waitUntil(lambda: footer.width() >= footer.sizeHint().width(), timeout=5000)
        whole = footer.fontMetrics().horizontalAdvance(footer.text())
        assert footer.contentsRect().width() >= whole  # every character drawn, none elided
        assert footer.toolTip() == footer.text()
        window.resize(640, 480)  # no room: elided, and the tooltip says it whole
        qtbot.waitUntil(lambda: footer.width() < footer.sizeHint().width(), timeout=5000)
        assert footer.toolTip() == footer.text() and footer.text().startswith(SMOL)
