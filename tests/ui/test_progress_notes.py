"""Work that takes time before an answer is said inline in the answering turn (the newcomer
review's M4), by the one note that says a long prompt's reading: a real tiny vision model (the
random pair of tests/tiny_vision.py) encoding two pasted images says "Encoding image 1 of 2…"
then "… 2 of 2…"; a message sent while its model reloads (after "Raise the context") says
"Loading the model… N %" until the model is in; the note goes once the answer's words come.
Real widgets offscreen, the real worker."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.ui.window.main_window import MainWindow
from tests import tiny_vision
from tests.ui.test_gui_images import chips_loaded, paste_screenshot
from tests.ui.test_window import make_window

Seen = list[tuple[bool, str, bool]]  # the note: shown, its words, inside the answering turn


def _watch(window: MainWindow, seen: Seen, turn_of: Any) -> Any:
    """A slot recording the note as it stands, connected after the note's own."""
    note = window.reading

    def look(*args: Any) -> None:
        at = turn_of(*args) - window.transcript.first
        inside = (
            0 <= at < len(window.transcript.turns) and note.parent() is window.transcript.turns[at]
        )
        seen.append((note.isVisible(), note.text(), inside))

    return look


@pytest.fixture
def vision_window(qtbot: Any, qloop: Any, tmp_path: Path) -> Iterator[MainWindow]:
    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.engine.local.client import WorkerClient
    from app.ui.window.main_window import UiState

    client = WorkerClient()
    client.load(tiny_vision.build_text(), n_ctx=512, n_threads=1,
                projector=tiny_vision.build_projector())  # fmt: skip
    host = ModelHost(EngineBridge())
    host.use(client, "smollm2", "tiny vision", loader=client)
    window = MainWindow(ChatController(host), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    window.controller.settle()
    window.controller.max_tokens = 4
    try:
        yield window
    finally:
        window.close()
        host.close()
        client.close()


def test_each_image_encoded_is_said_inline_until_the_answer_starts(
    qtbot: Any, vision_window: MainWindow
) -> None:
    window, chat = vision_window, vision_window.controller
    for seed in (21, 22):
        paste_screenshot(qtbot, window, seed)
    qtbot.waitUntil(lambda: chips_loaded(window, 2), timeout=10_000)
    seen: Seen = []
    chat.progressed.connect(_watch(window, seen, lambda turn, _said: turn))
    with qtbot.waitSignal(chat.replyFinished, timeout=60_000):
        window.composer.box.setPlainText("What differs?")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    images = [text for _, text, _ in seen if text.startswith("Encoding")]
    assert images == ["Encoding image 1 of 2…", "Encoding image 2 of 2…"]
    assert all(shown and inside for shown, _, inside in seen)
    assert not window.reading.isVisible()  # the answer came: the note went
    reply = chat.doc.turns[-1].version.reply
    assert reply is not None and reply.debug.timings["image_tokens"] == 32


def test_a_message_waiting_on_a_model_load_says_the_load_inline(
    qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any
) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    chat = window.controller
    with qtbot.waitSignal(window.host.loaded, timeout=120_000):
        window.load_model(str(smollm_model), n_ctx=2_048)
    chat.max_tokens = 4
    answering: list[int] = []
    chat.replyStarted.connect(answering.append)
    seen: Seen = []
    window.host.progress.connect(
        _watch(window, seen, lambda _f: answering[-1] if answering else -1)
    )
    with qtbot.waitSignal(chat.replyFinished, timeout=120_000):
        window.composer.raiseContext.emit(3_072)  # "Raise the context": the model reloads
        window.composer.box.setPlainText("Hello there")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)  # sent while it loads: it waits
    loading = [
        (shown, m, inside)
        for shown, text, inside in seen
        if (m := re.fullmatch(r"Loading the model… (\d+) %", text))
    ]
    assert answering and loading, seen
    assert all(shown and inside for shown, _, inside in loading)
    shares = [int(m.group(1)) for _, m, _ in loading]
    assert shares == sorted(shares)
    assert window.host.n_ctx == 3_072 and not window.reading.isVisible()
    reply = chat.doc.turns[-1].version.reply
    assert reply is not None and reply.state in ("done", "incomplete")
