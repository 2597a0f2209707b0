"""API keys in the OS keyring, and nowhere else.

Guarantees: a key is stored in the user's keyring (Secret Service, macOS Keychain, Windows
Credential Locker) under the service `harmony-desk` with the key's name; it is never written to a
file, logged, printed or put in an error message: every value set or read here is handed to
`app.domain.redact.remember`, so the one redaction function removes it from all the app writes.
Where there is no usable keyring (a headless
Linux without a Secret Service, a locked or failing one), `problem` says so in plain words and
keys are kept in memory for this run only: never a silent fallback to plain text.
`install_key` gives a random key the app makes for itself (the KV snapshots' MAC key), kept
the same way; where the keyring cannot keep it, it gives none rather than one for this run.
"""

from __future__ import annotations

import os
import re
from typing import Any

from app.domain.endpoint import NAME_PATTERN, Endpoint
from app.domain.redact import remember
from app.errors import InvalidInputError

SERVICE = "harmony-desk"
NO_KEYRING = (
    "no usable keyring was found ({why}); keys are kept in memory for this run only and are not"
    " saved. Install and unlock one (on Linux: a Secret Service such as gnome-keyring) to keep them"
)


class MissingKey(InvalidInputError):
    """An endpoint needs a key that is not set."""


class Secrets:
    """API keys by name."""

    def __init__(self, backend: Any = None) -> None:
        import keyring

        self.backend = backend if backend is not None else keyring.get_keyring()
        self._memory: dict[str, str] = {}
        self.problem: str | None = None
        try:
            usable = getattr(self.backend, "priority", 0) > 0  # not the "fail"/"null" ones
        except Exception as exc:  # a backend chosen earlier whose service has gone (D-Bus)
            usable = False
            self._unusable(f"{type(exc).__name__}: {exc}")
        if not usable:
            self._unusable(f"backend {type(self.backend).__module__}")

    @property
    def saved(self) -> bool:
        """Whether keys set now outlive this run."""
        return self.problem is None

    def _unusable(self, why: str) -> None:
        if self.problem is None:
            self.problem = NO_KEYRING.format(why=why)

    def set(self, name: str, key: str) -> None:
        _check(name)
        if not key.strip():
            raise InvalidInputError("the key is empty; nothing was stored")
        remember(key)
        if self.saved:
            try:
                self.backend.set_password(SERVICE, name, key.strip())
                self._memory.pop(name, None)
                return
            except Exception as exc:  # keyring and its D-Bus layers raise several kinds
                self._unusable(type(exc).__name__)
        self._memory[name] = key.strip()

    def get(self, name: str) -> str | None:
        _check(name)
        if name in self._memory or not self.saved:
            remember(self._memory.get(name))
            return self._memory.get(name)
        try:
            value = self.backend.get_password(SERVICE, name)
        except Exception as exc:  # a locked or vanished keyring
            self._unusable(type(exc).__name__)
            return None
        if not isinstance(value, str):
            return None
        remember(value)
        return value

    def install_key(self, name: str, size: int) -> bytes | None:
        """This install's random key of `size` bytes kept under `name` (made and stored the
        first time; one stored that is not such a key is replaced); None when the keyring
        cannot keep it (`problem` says why): a key that would not outlive this run is none."""
        stored = self.get(name) if self.saved else None
        if stored is not None:
            try:
                key = bytes.fromhex(stored)
            except ValueError:
                key = b""
            if len(key) == size:
                return key
        if not self.saved:
            return None
        key = os.urandom(size)
        self.set(name, key.hex())
        return key if self.saved else None

    def key_for(self, endpoint: Endpoint) -> str | None:
        """The key `endpoint` is used with (None: it needs none); `MissingKey` says how to set
        one that is missing."""
        if endpoint.key_name is None:
            return None
        key = self.get(endpoint.key_name)
        if key is None:
            extra = f" ({self.problem})" if self.problem else ""
            raise MissingKey(
                f"the key {endpoint.key_name!r} of {endpoint.name} is not set: add it in File ▸"
                f" Endpoints… or with `harmony-desk keys set {endpoint.key_name}`{extra}"
            )
        return key

    def delete(self, name: str) -> bool:
        """Forget the key; whether there was one."""
        _check(name)
        had = self._memory.pop(name, None) is not None
        if self.saved:
            try:
                if self.backend.get_password(SERVICE, name) is not None:
                    self.backend.delete_password(SERVICE, name)
                    had = True
            except Exception as exc:
                self._unusable(type(exc).__name__)
        return had


def _check(name: str) -> None:
    if not re.match(NAME_PATTERN, name):
        raise InvalidInputError(
            f"{name!r} is not a key name: letters, digits, '.', '_' and '-' (up to 64)"
        )


__all__ = ["SERVICE", "MissingKey", "Secrets"]
