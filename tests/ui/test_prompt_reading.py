"""A long prompt being read is said inline in the transcript (the newcomer review's M4): the
real SmolLM2 model reads a ~1,700-token message in batches, and the answering turn shows
"Reading 1,7xx tokens… NN %" until its first words come; the note is gone once they do. Real
widgets offscreen, the real worker."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.domain.progress import PromptRead
from tests.ui.test_window import make_window


def test_a_long_prompt_read_is_said_inline_until_the_answer_starts(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    chat = window.controller
    with qtbot.waitSignal(window.host.loaded, timeout=120_000):
        window.load_model(str(smollm_model), n_ctx=4_096)
    chat.max_tokens = 8
    seen: list[tuple[bool, str, bool]] = []
    note = window.reading

    def read(turn: int, progress: object) -> None:  # after the note took it
        if not isinstance(progress, PromptRead):
            return
        shown_in = window.transcript.turns[turn - window.transcript.first]
        seen.append((note.isVisible(), note.text(), note.parent() is shown_in))

    chat.progressed.connect(read)
    with qtbot.waitSignal(chat.replyFinished, timeout=120_000):
        window.composer.box.setPlainText("Summarise: " + "the pump ran and the valve held. " * 220)
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    assert seen and all(visible and inside for visible, _, inside in seen)
    shares = [int(m.group(2)) for _, text, _ in seen if (m := re.fullmatch(r"Reading ([\d,]+) tokens… (\d+) %", text))]
    assert len(shares) == len(seen) and shares == sorted(shares) and shares[-1] < 100
    assert not note.isVisible()  # the answer came: the note went
    assert chat.doc.turns[-1].version.reply.state in ("done", "incomplete")  # (8 tokens at most)
