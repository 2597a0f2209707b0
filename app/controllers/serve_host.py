"""The window's "Serve this model": the local OpenAI-compatible server on the window's model.

Guarantees: the server runs uvicorn on a thread of its own and its clients' generations on a
pool of threads of their own, all sent to the model worker at once: it decodes as many as it
has sequences side by side and queues the rest in the order they came, while the window's own
turns run on the window's engine thread and the worker's reserved sequence, never queued
behind a client; it binds to 127.0.0.1 only, with the same
deadlines and connection limit as `serve` (`app.server.listen`); `start` says why
it could not (the port taken, no model loaded) and leaves nothing running; `stop` ends it and
its thread, and unloads the models it loaded; the request count is what the server counted.
A request naming another model of the library loads it in a worker of its own (`fleet`:
within the memory free when the server started, idle ones unloaded after the settings' time,
the settings' aliases), while the window's model is the server's default, shared with the
window and never unloaded by the server. Importing this module loads nothing of the server
(`app.server`, starlette, uvicorn): `start` does.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.errors import HarmonyDeskError

if TYPE_CHECKING:  # the server package (starlette, uvicorn) loads when a server starts
    from app.controllers.bridge import EngineBridge
    from app.controllers.model_host import ModelHost
    from app.engine.local.session import ChatSession
    from app.server.fleet import Fleet
    from app.server.served import ServedModel

START_S = 10.0
CLIENTS_AT_ONCE = 64  # clients' generations sent to the worker at once (it queues beyond its own)


class ServeError(HarmonyDeskError):
    """The server could not start."""


class ServeHost:
    """See the module guarantees."""

    def __init__(self, host: ModelHost, bridge: EngineBridge) -> None:
        self.host, self.bridge = host, bridge
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.served: ServedModel | None = None
        self.fleet: Fleet | None = None
        self.address = ""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _session(self) -> ChatSession:
        return self.host.session()

    def start(self, port: int = 8080) -> str:
        """Serve the loaded model on 127.0.0.1:`port`; its address (or `ServeError`)."""
        import uvicorn

        from app.documents.embedder import WordLlamaEmbedder
        from app.engine.local.memory import available_memory
        from app.engine.local.serving import Models
        from app.server.aliases import Aliases
        from app.server.claims import Resident
        from app.server.fleet import Fleet
        from app.server.library_models import LibraryModels
        from app.server.listen import server_config  # uvicorn loads when a server starts
        from app.server.options import ServeOptions
        from app.server.served import ServedModel
        from app.settings import load_settings

        template = self.host.template
        if not self.host.ready or template is None:
            raise ServeError("load a model first: the server serves the window's model")
        if self.running:
            return self.address
        name = Path(self.host.path).stem or self.host.name
        engine = cf.ThreadPoolExecutor(max_workers=CLIENTS_AT_ONCE, thread_name_prefix="client")
        served = ServedModel(
            name=name,
            engine=engine,
            session=self._session,
            template=template,
            n_ctx=self.host.n_ctx or 4096,
            created=int(time.time()),
            use=self.host.worker.sequence_use if self.host.worker is not None else None,
            embedder=WordLlamaEmbedder(),  # /v1/embeddings: the app's document embedding model
        )
        settings = load_settings()
        fleet = Fleet(
            Resident(served, 0, self.host.path),  # counted in what is free already; the window's
            loader=LibraryModels(Models(settings.threads or None, settings.parallel), engine),
            budget=available_memory(),
            idle_s=settings.server_idle_minutes * 60 or None,
            aliases=Aliases.of(settings.server_aliases),
        )
        options = ServeOptions(port=port)
        server = uvicorn.Server(server_config(fleet, options))
        thread = threading.Thread(target=server.run, name="local-server", daemon=True)
        thread.start()
        deadline = time.monotonic() + START_S
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not server.started:
            server.should_exit = True
            thread.join(2)
            raise ServeError(
                f"the server could not listen on 127.0.0.1:{port} (is the port in use?)"
            )
        self._server, self._thread, self.served, self.fleet = server, thread, served, fleet
        self.address = f"http://127.0.0.1:{port}/v1"
        return self.address

    def requests(self) -> int:
        return self.served.stats.get("requests", 0) if self.served is not None else 0

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(5)
        if self.fleet is not None:
            self.fleet.close()
            self.fleet = None
        if self.served is not None:
            self.served.engine.shutdown(wait=False, cancel_futures=True)


__all__ = ["ServeError", "ServeHost"]
