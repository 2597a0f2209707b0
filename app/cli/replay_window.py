"""`replay --frontend window`: one generation through the real window, offscreen.

Guarantee: the turn runs through a real `ChatController` (the engine thread, the reply
builder, coalesced painting) into a real `MainWindow`; the shown texts are read back from the
painted transcript, not from the model's data, so a painting bug shows in the result.
"""

from __future__ import annotations

import asyncio
from typing import Any

from app.cli.replay_source import USER_TEXT, Source, endpoint_of, result_of, session_for

_LOOP: Any = None


def _loop() -> Any:
    global _LOOP
    if _LOOP is None:
        import qasync

        from app.ui.app import application

        _LOOP = qasync.QEventLoop(application())
        asyncio.set_event_loop(_LOOP)
    return _LOOP


class _ReplayRemote:
    """A remote host whose one endpoint is the scripted server of this replay."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.endpoints: tuple[Any, ...] = ()  # none configured: the reply names the endpoint alone

    def session(self, name: str, **_options: Any) -> Any:
        return session_for(self.source, "remote-text")


def run_in_window(source: Source, via: str) -> dict[str, Any]:
    """The replay line of `source` as the window showed it."""
    from app.controllers.bridge import EngineBridge
    from app.controllers.model_host import ModelHost
    from app.engine.local.scripted import ScriptedClient
    from app.ui.app import build_window
    from app.ui.markdown.view import MarkdownView

    loop = _loop()
    host = ModelHost(EngineBridge())
    host.use(ScriptedClient([source.tokens]), "harmony")
    window = build_window(host)
    controller = window.controller
    if via == "remote-text":
        controller.remote = _ReplayRemote(source)  # type: ignore[assignment]
        controller.doc.endpoint = endpoint_of().name
    try:
        assert controller.send(USER_TEXT), "the window did not take the message"
        loop.run_until_complete(controller.wait())
        widget = window.transcript.turns[-1]
        reply = widget.turn.version.reply
        assert reply is not None
        texts = [
            w.source_text if isinstance(w, MarkdownView) else s.text
            for w, s in zip(widget.segments, reply.segments, strict=True)
        ]
        builder = controller.last_builder
        assert builder is not None and builder.reply is reply
        return result_of(builder, texts)
    finally:
        window.close()
        controller.close()


__all__ = ["run_in_window"]
