"""A real server in the test's own process, on loopback, over a scripted source: what tests of
the HTTP boundary share (the guard, the intake, each API's shapes) when no model is needed."""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.server.listen import server_config
from app.server.options import ServeOptions
from app.server.served import ServedModel
from app.templates.base import Template
from app.templates.registry import get_template


@contextmanager
def scripted_server(
    client: ScriptedClient, options: ServeOptions, template: Template | None = None
) -> Iterator[str]:
    """uvicorn serving `client` (with `template`, the Harmony one unless given; answers of
    `options.max_tokens`) on `options.port`, started before the base URL is given and stopped
    after."""
    import uvicorn

    template = template or get_template("harmony")

    def session() -> ChatSession:
        return ChatSession(client, template, sampling=Sampling(), max_tokens=options.max_tokens)

    engine = cf.ThreadPoolExecutor(max_workers=1)
    model = ServedModel(name="scripted", engine=engine, session=session, template=template, n_ctx=8192)
    server = uvicorn.Server(server_config(model, options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{options.port}"
    finally:
        server.should_exit = True
        thread.join(5)
        engine.shutdown()


__all__ = ["scripted_server"]
