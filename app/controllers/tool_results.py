"""The whole result of a tool call whose result the model read cut, for the window.

Guarantees: `whole_key` says whether a result, as a tool card shows it, was cut (the key of the
whole, read from the marker that ends what the model read; None when it was read whole);
`WholeResults.fetch` reads the whole result kept under that key in the tool audit
(`app.tools.audit`) off the GUI thread and hands `then` on the GUI thread the text and ""; or
None and the sentence that says why (the audit no longer holds it, or could not be read).
"""

from __future__ import annotations

from collections.abc import Callable

from app.controllers.background import Background
from app.tools.audit import AuditLog, cut_key, whole_of


def whole_key(text: str) -> str | None:
    """The key of the whole result `text` was cut from (None: it was read whole)."""
    return cut_key(text)


def whole_result(key: str, audit: AuditLog | None = None) -> str | None:
    """The whole result kept under `key` in the tool audit (None: it holds none); blocks."""
    entry = (audit or AuditLog()).find(key)
    return None if entry is None else whole_of(entry)


Then = Callable[[str | None, str], None]  # the whole result (None: not found), and why not


class WholeResults:
    """Whole results read off the GUI thread (see the module guarantees)."""

    def __init__(self, audit: AuditLog | None = None) -> None:
        self._audit = audit
        self._then: Then | None = None
        self._jobs = Background("whole-result", self._failed)

    def fetch(self, key: str, then: Then) -> None:
        """Read the whole result kept under `key`; `then` hears of it on the GUI thread."""
        self._then = then
        where = (self._audit or AuditLog()).path
        missing = f"The tool audit ({where}) no longer holds result {key}."
        self._jobs.run(
            lambda: whole_result(key, self._audit),
            lambda text: then(text, "" if text is not None else missing),
        )

    def _failed(self, message: str, _details: str) -> None:
        if self._then is not None:
            self._then(None, f"The tool audit could not be read: {message}")


__all__ = ["WholeResults", "whole_key", "whole_result"]
