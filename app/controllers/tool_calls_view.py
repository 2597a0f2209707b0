"""One chat's tool calls, as the window's Tool calls view shows them: read from the tool audit,
and exported, off the GUI thread.

The rows themselves are made without Qt (`app/tools/audit_rows.py`, re-exported here), so the
terminal's export says the same.

Guarantees: `ToolCallsView.load(conversation)` reads the audit on a thread of its own and emits
`loaded` on the GUI thread with a `CallsRead`: the rows, how many damaged lines were skipped,
and a sentence when the audit could not be read; a read for a conversation no longer asked for
is dropped. `export(conversation, out, fmt, title)` writes that conversation's calls with the
one audit writer (`app/tools/audit_export.py`: JSON Lines or Markdown) on a thread of its own
and emits `exported` on the GUI thread with an `Exported`: the file, how many calls, and a
sentence when it could not be written (never raised). `shown_path(path)` is a path as a status
line shows it: `~/…` under the home folder, else the file's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.controllers.background import Background
from app.tools.audit import AuditLog
from app.tools.audit_export import Format, export_calls
from app.tools.audit_rows import (
    CallRow,
    CallsRead,
    approver,
    configured_servers,
    read_calls,
    row_of,
    rows_of,
)


@dataclass(frozen=True)
class Exported:
    """What one export did: the file, how many calls it holds, why it failed ("")."""

    path: str
    calls: int = 0
    problem: str = ""


def shown_path(path: str | Path) -> str:
    """`path` for a status line: `~/…` under the home folder, else only its name."""
    path = Path(path)
    try:
        return str(Path("~") / path.relative_to(Path.home()))
    except ValueError:
        return path.name


class ToolCallsView(QObject):
    """Reads a conversation's calls off the GUI thread (see the module guarantees)."""

    loaded = Signal(object)  # CallsRead
    exported = Signal(object)  # Exported

    def __init__(
        self,
        audit: AuditLog | None = None,
        servers: Callable[[], Iterable[str]] = configured_servers,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.audit, self._servers = audit, servers
        self._asked = ""  # the conversation last asked for: a later ask wins
        self._jobs = Background("tool-calls-view", self._failed)
        self._exports = Background("tool-calls-export", self._not_written)
        self._writing = ""  # the file an export writes now

    @property
    def path(self) -> str:
        return str((self.audit or AuditLog()).path)

    def load(self, conversation: str) -> None:
        """Read `conversation`'s calls; `loaded` tells of them (a read for a conversation no
        longer asked for is dropped)."""
        self._asked = conversation
        self._jobs.run(lambda: read_calls(conversation, self.audit, self._servers), self._arrived)

    def _arrived(self, read: CallsRead) -> None:
        if read.conversation == self._asked:
            self.loaded.emit(read)

    def _failed(self, message: str, _details: str) -> None:
        problem = f"The tool audit ({self.path}) could not be read: {message}"
        self.loaded.emit(CallsRead(self._asked, problem=problem))

    def export(self, conversation: str, out: str, fmt: Format, title: str = "") -> None:
        """Write `conversation`'s calls to `out` as `fmt`; `exported` tells how it went."""
        self._writing = out

        def write() -> Exported:
            servers = self._servers() if fmt == "md" else ()
            read = export_calls(
                Path(out),
                log=self.audit,
                conversation_id=conversation,
                fmt=fmt,
                servers=servers,
                title=title,
            )
            return Exported(out, len(read.entries))

        self._exports.run(write, self.exported.emit)

    def _not_written(self, message: str, _details: str) -> None:
        problem = f"The tool calls could not be exported to {self._writing}: {message}"
        self.exported.emit(Exported(self._writing, problem=problem))


__all__ = [
    "CallRow",
    "CallsRead",
    "Exported",
    "Format",
    "ToolCallsView",
    "approver",
    "configured_servers",
    "read_calls",
    "row_of",
    "rows_of",
    "shown_path",
]
