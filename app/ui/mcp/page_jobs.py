"""The MCP page's background work and its small helpers: a job's answer that comes back after
the page has gone is dropped, and a job's failure is a value said in the page's problem banner
(its sentence, and its details behind the banner's Details button), never raised on the job's
thread; `pairs` reads the page's KEY=VALUE boxes and `named` gives a widget its accessible name
and tooltip; `FIELDS` are the server form's labels and tooltips, in the form's order, and
`EXAMPLES` the KEY=VALUE boxes' placeholders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtWidgets import QWidget
from shiboken6 import isValid

from app.controllers.background import Background

FIELDS = {  # the server form's labels and their tooltips, in the form's order
    "Server name": "Letters, digits, '_' and '-'",
    "Command or URL": "A local server's command line, or a remote one's URL",
    "Environment": "KEY=VALUE per line (a local server's plain values)",
    "Secrets": "KEY=VALUE per line: environment values (local) or headers"
    " (remote) kept in the keyring, never in a file; leave VALUE empty to keep the"
    " stored one",
    "Headers": "KEY=VALUE per line (a remote server's plain headers)",
    "Call timeout": "How long a call may go without a result or progress",
}

EXAMPLES = {  # the KEY=VALUE boxes' placeholders: what a line looks like
    "Environment": "LOG_LEVEL=info   (one KEY=VALUE per line)",
    "Secrets": "API_TOKEN=…   (kept in the keyring, never in a file)",
    "Headers": "X-Team=research   (one KEY=VALUE per line)",
}


class Page(Protocol):
    """What the jobs need of the page: where a failure is said."""

    def problem(self, text: str, details: str = "") -> None: ...


def pairs(text: str) -> dict[str, str]:
    """KEY=VALUE lines (blank lines skipped; a line without `=` is a key with no value)."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def named(widget: QWidget, name: str, tip: str = "") -> None:
    widget.setAccessibleName(name)
    if tip:
        widget.setToolTip(tip)


class Failed:
    """A background job's failure as a value: the error's sentence and its details."""

    def __init__(self, exc: Exception) -> None:
        self.text = getattr(exc, "message", None) or str(exc) or "Something went wrong."
        self.details = getattr(exc, "details", None)
        if self.details is None:  # not one of the app's errors: its class and words
            self.details = f"{type(exc).__name__}: {exc}"


class PageJobs(Background):
    """The page's background work: an answer that comes after the page is gone is dropped; a
    failure goes to the page's problem banner with its details."""

    def __init__(self, page: Page) -> None:
        super().__init__(
            "mcp-page", lambda text, details: page.problem(text, details) if isValid(page) else None
        )
        self.page = page

    def run(self, work: Callable[[], Any], then: Callable[[Any], None]) -> None:
        def attempt() -> Any:
            try:
                return work()
            except Exception as exc:  # said in the page, never raised on the job's thread
                return Failed(exc)

        def back(result: Any) -> None:
            if not isValid(self.page):
                return
            if isinstance(result, Failed):
                self.page.problem(result.text, result.details or "")
            else:
                then(result)

        super().run(attempt, back)


__all__ = ["EXAMPLES", "FIELDS", "Failed", "PageJobs", "named", "pairs"]
