"""Remote endpoints as the window sees them: the configured list, adding one with its key,
testing a connection, and the session a remote conversation talks through.

Guarantees: the settings file and the keyring are read and written off the GUI thread (a
keyring call can wait on D-Bus or an unlock prompt), results come back as signals; a key goes
from the dialog to the keyring only (never to settings, the store or a log); where the keyring
is unusable the user is told the key is kept for this run only; `session` (called on the engine
thread) fails with a plain reason when the endpoint is gone or its key is not set.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.controllers.background import Background
from app.domain.endpoint import Endpoint
from app.domain.sampling import Sampling
from app.engine.remote.session import RemoteSession, check_connection
from app.errors import ErrorCode, HarmonyDeskError
from app.secrets import MissingKey, Secrets
from app.settings import load_settings, save_settings


class EndpointError(HarmonyDeskError):
    """Why a remote conversation cannot start (said to the user as the turn's error)."""

    code = ErrorCode.NETWORK


class RemoteHost(QObject):
    changed = Signal()  # `endpoints` was read again
    tested = Signal(bool, str)  # the connection test: ok, what happened
    saved = Signal(str)  # an endpoint was saved: what to tell the user
    failed = Signal(str)

    def __init__(self, secrets: Secrets | None = None) -> None:
        super().__init__()
        self.endpoints: tuple[Endpoint, ...] = ()
        self._secrets = secrets
        self._lock = threading.Lock()
        self._worker = Background("endpoints", lambda text, _details: self.failed.emit(text))
        self.reload()

    @property
    def secrets(self) -> Secrets:
        with self._lock:  # made on first use, off the GUI thread
            if self._secrets is None:
                self._secrets = Secrets()
            return self._secrets

    def _background(self, work: Callable[[], Any], then: Callable[[Any], None]) -> None:
        self._worker.run(work, then)

    def reload(self) -> None:
        def shown(endpoints: tuple[Endpoint, ...]) -> None:
            self.endpoints = endpoints
            self.changed.emit()

        self._background(lambda: load_settings().endpoints, shown)

    def add(self, endpoint: Endpoint, key: str) -> None:
        """Save `endpoint` in the settings and `key` (if any) in the keyring."""

        def work() -> str:
            save_settings(load_settings().with_endpoint(endpoint))
            if endpoint.key_name and key.strip():
                self.secrets.set(endpoint.key_name, key)
                if not self.secrets.saved:
                    return (
                        f"Endpoint {endpoint.name} saved. Its key is NOT saved:"
                        f" {self.secrets.problem}."
                    )
            return f"Endpoint {endpoint.name} saved."

        def then(message: str) -> None:
            self.saved.emit(message)
            self.reload()

        self._background(work, then)

    def test(self, endpoint: Endpoint, key: str) -> None:
        """Try `endpoint` with `key` (or its stored key when `key` is empty)."""

        def work() -> tuple[bool, str]:
            use = key.strip() or (
                self.secrets.get(endpoint.key_name) if endpoint.key_name else None
            )
            return check_connection(endpoint, use)

        self._background(work, lambda result: self.tested.emit(*result))

    def session(
        self, name: str, *, sampling: Sampling | None = None, max_tokens: int = 1024
    ) -> RemoteSession:
        """The session for a conversation that talks to endpoint `name` (engine thread)."""
        endpoint = load_settings().endpoint(name)
        if endpoint is None:
            raise EndpointError(
                f"the endpoint {name!r} is no longer configured; choose another in the model bar"
            )
        try:
            key = self.secrets.key_for(endpoint)
        except MissingKey as exc:
            raise EndpointError(exc.message) from None
        return RemoteSession(endpoint, key, sampling=sampling, max_tokens=max_tokens)


__all__ = ["EndpointError", "RemoteHost"]
