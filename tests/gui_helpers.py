"""Shared set-up for window tests: a qasync loop that runs under pytest-qt's waits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel, QLineEdit, QPlainTextEdit, QTextEdit, QWidget


@pytest.fixture
def qloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    import qasync

    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    yield loop
    for task in asyncio.all_tasks(loop):  # what the test left pending (a count a timer started)
        task.cancel()
        task.get_coro().close()  # never started: no "coroutine was never awaited" in a later test
    # qasync's stop() would quit the application (and every later wait); end this loop alone
    qapp.aboutToQuit.disconnect(loop._after_run_forever)
    loop._QEventLoop__is_running = False  # type: ignore[attr-defined]
    loop._after_run_forever()
    asyncio.events._set_running_loop(None)
    loop.close()
    asyncio.set_event_loop(None)


def all_text(root: QWidget) -> str:
    """Every piece of text any widget under `root` holds, visible or not."""
    parts: list[str] = []
    for w in [root, *root.findChildren(QWidget)]:
        if isinstance(w, QLabel):
            parts.append(w.text())
        elif isinstance(w, QTextEdit | QPlainTextEdit):
            parts.append(w.toPlainText())
        elif isinstance(w, QLineEdit):
            parts.append(w.text())
    return "\n".join(parts)


@contextmanager
def real_model_window(
    qtbot: Any,
    tmp_path: Any,
    model: Any,
    max_tokens: int,
    prompt: str = "Hi",
    seed: int | None = None,
) -> Iterator[Any]:
    """A window on a real GGUF (one thread, 512 tokens of context), the debug pane open, one
    message answered (sampled with `seed` when given: the same answers every run); the window
    and its worker are closed afterwards."""
    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.ui.window.main_window import MainWindow, UiState
    from tests.ui.test_window import send

    host = ModelHost(EngineBridge())
    window = MainWindow(ChatController(host), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(host.loaded, timeout=120_000):
            window.load_model(str(model), n_ctx=512, threads=1)
        window.set_debug(True, remember=False)
        if seed is not None and host.sampling is not None:
            host.sampling = host.sampling.model_copy(update={"seed": seed})
        window.controller.max_tokens = max_tokens
        send(qtbot, window, prompt, timeout=60_000)
        yield window
    finally:
        window.close()
        host.close()
