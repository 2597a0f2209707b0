"""Run by `test_small_screen_dialogs.py` in a fresh process whose offscreen screen has the size
asked: builds the window as the app does, opens the dialogs the first screen probe does not
(model settings on a model that offloads to a GPU, so every row is there; the Serve page; a
tool's whole result; an MCP server's form of many fields; its sampling request with a long
system prompt and many messages) and prints, as JSON, the screen's available area and each
dialog's geometry, its buttons outside scroll areas and its scroll areas (`screen_probe`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication, QWidget

from tests.ui.screen_probe import report, settle


def many_fields() -> Any:
    from app.domain.elicit_form import Form, FormField

    fields = tuple(
        FormField(f"field_{n}", "text", f"Field {n}", f"What field {n} is for, said at some length.",
                  required=n % 3 == 0)
        for n in range(14)
    )
    return Form("survey", "Tell us about your project, please.", fields)


def sampling_ask() -> Any:
    from app.controllers.mcp_asks import SamplingAsk

    messages = tuple(("user" if n % 2 == 0 else "assistant", f"Message {n}: " + "words " * 40) for n in range(12))
    return SamplingAsk("summariser", "A chat", "You summarise. " * 30, messages, 512, 4096)


def dialogs(window: Any) -> dict[str, Callable[[], QWidget]]:
    from app.controllers.bridge import EngineBridge
    from app.controllers.model_host import ModelHost
    from app.domain.placement import Placement
    from app.engine.local.scripted import ScriptedClient
    from app.ui.mcp.elicit_dialog import FormDialog
    from app.ui.mcp.sampling_dialog import SamplingDialog
    from app.ui.settings.model_settings import ModelSettings
    from app.ui.transcript.whole_result import WholeResultDialog

    client = ScriptedClient([])
    assert client.info is not None
    client.info = dataclasses.replace(client.info, placement=Placement(True, 24, 24, False, "f16", False, 0))
    gpu = ModelHost(EngineBridge())
    gpu.use(client, "harmony")
    return {
        "model_settings": lambda: ModelSettings(gpu, window),
        "serve": lambda: window.serve.show_page(),
        "whole_result": lambda: WholeResultDialog("square · envy", "no-such-call", window),
        "elicit_form": lambda: FormDialog(many_fields(), lambda _reply: None, window),
        "sampling": lambda: SamplingDialog(sampling_ask(), lambda _choice: None, window),
    }


def wait_loaded(app: QApplication, dialog: QWidget) -> None:
    """A dialog that reads something first (the whole result): until it has said it."""
    loaded = getattr(dialog, "loaded", None)
    if loaded is None:
        return
    done: list[bool] = []
    loaded.connect(lambda: done.append(True))
    deadline = time.monotonic() + 30
    while not done and time.monotonic() < deadline:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


def main() -> None:
    from app.controllers.bridge import EngineBridge
    from app.controllers.model_host import ModelHost
    from app.ui.app import application, build_window

    app: QApplication = application()
    host = ModelHost(EngineBridge())
    host.use_scripted([])
    window = build_window(host)
    window.show()
    settle(app)
    facts: dict[str, Any] = {"available": list(window.screen().availableGeometry().getRect()), "dialogs": {}}
    report(app, window, host, facts, dialogs(window), wait_loaded)


if __name__ == "__main__":
    main()
