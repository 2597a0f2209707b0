"""Switching chats in the window reads nothing twice, on the real SmolLM2: chat A answered, a
new chat B answered (it takes the model's cache), back to A — A's next turn continues from the
state kept after its answer (restored from memory), and its debug pane and footer say so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.domain.figures import Figures
from app.domain.history import Reply
from tests.gui_helpers import real_model_window
from tests.ui.test_window import send

FIRST = "Describe a lighthouse. " + "It stands on the rocks by the sea and its light turns all night. " * 8


def _shown(window: Any) -> Reply:
    reply = window.controller.doc.turns[-1].version.reply
    assert isinstance(reply, Reply)
    return reply


def test_going_back_to_a_chat_restores_its_state_from_memory(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    with real_model_window(qtbot, tmp_path, smollm_model, max_tokens=8, prompt=FIRST) as window:
        controller = window.controller
        chat_a = controller.doc.id
        first = _shown(window).debug.timings
        assert first["restored_memory"] == first["restored_disk"] == 0
        controller.new_chat()
        send(qtbot, window, "Name a colour.", timeout=60_000)
        with qtbot.waitSignal(controller.docChanged, timeout=10_000):
            controller.select(chat_a)
        assert controller.doc.id == chat_a
        send(qtbot, window, "And its colour?", timeout=60_000)
        reply = _shown(window)
        t = reply.debug.timings
        assert t["restored_memory"] > first["prompt_tokens"] - 2 and t["prompt_reused"] == 0
        assert t["prompt_evaluated"] < 40  # only the new turn, not the first one again
        rows = dict(Figures.of(t, reply.debug.stop_reason, reply.model).rows())
        assert f"restored from memory: {t['restored_memory']:,} tokens" in rows["Prompt"]
