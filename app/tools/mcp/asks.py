"""What an MCP server asks of the host beside tool calls (sampling, elicitation), answered
within bounds and written to the audit log.

Guarantees: `bounded` runs a blocking answer (a person's choice, a model's generation) on a
thread of its own and never waits past its deadline: at the deadline the answer's `cancel`
event is set (a waiting dialog or prompt is withdrawn, a generation stops) and the result is
a `Refusal` that says how long it waited; a refusal is a value with one sentence for the
server (`ErrorData`), never an exception; every request is one audit record (`audit`), under
the conversation it came in, in the tool audit log's shape and redaction (`app.tools.audit`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from app.domain.events import CallOutcome, CallRecord
from app.tools.audit import AuditLog

T = TypeVar("T")
log = logging.getLogger("tools")

DENIED = -1  # the code MCP's own examples use for a request the user rejected
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001


@dataclass(frozen=True)
class Refusal:
    """A request the host will not or cannot answer: its sentence goes to the server."""

    message: str
    code: int = INTERNAL_ERROR

    def error_data(self) -> Any:
        from mcp import types

        return types.ErrorData(code=self.code, message=self.message)


async def bounded(
    work: Callable[[threading.Event], T], deadline_s: float, what: str
) -> T | Refusal:
    """`work(cancel)` on its own thread, or a `Refusal` once `deadline_s` has passed (`what`
    names the request in its sentence: "The sampling request of “git”")."""
    cancel = threading.Event()
    future = asyncio.get_running_loop().run_in_executor(None, work, cancel)
    try:
        return await asyncio.wait_for(asyncio.shield(future), deadline_s)
    except TimeoutError:
        cancel.set()
        return Refusal(f"{what} was not answered within {deadline_s:g} s.", REQUEST_TIMEOUT)
    except asyncio.CancelledError:  # the connection closed: the person's dialog goes too
        cancel.set()
        raise


@dataclass
class Audited:
    """One request's audit record as it is made: what was asked, how it was decided."""

    call_id: str
    tool: str  # `mcp:SERVER.sampling`, `mcp:SERVER.elicitation`
    sent: dict[str, Any]
    conversation: str = ""
    decision: str = ""
    began: float = 0.0

    def __post_init__(self) -> None:
        self.began = self.began or time.monotonic()

    def record(self, ok: bool, content: Any = None, error: Refusal | None = None) -> CallRecord:
        outcome = CallOutcome(
            call_id=self.call_id,
            ok=ok,
            content=content,
            error_code=None if error is None else str(error.code),
            error=None if error is None else error.message,
            arguments=self.sent,
            decision=self.decision,
            duration_ms=(time.monotonic() - self.began) * 1000,
        )
        sent = json.dumps(self.sent, ensure_ascii=False, default=str)
        return CallRecord(self.call_id, self.tool, sent, outcome)


class _Conversing(Protocol):
    def conversation(self) -> str: ...


async def over_cap(
    host: _Conversing,
    server: str,
    entry: Audited,
    over: Any,
    refused: Callable[[str, Audited, Any], Any],
) -> Any:
    """A request past a cap (`caps.OverCap`): the first is audited under the host's
    conversation and logged (`refused`), the rest only answered with their error."""
    if not over.first:
        return over.error_data()
    entry.decision = "over the cap"
    entry.conversation = await asyncio.to_thread(host.conversation)
    return refused(server, entry, over)


def audit(log_file: AuditLog | None, entry: Audited, record: CallRecord) -> None:
    """Append `record` under its conversation; a log that cannot be written is said, never
    fatal to the server's request."""
    try:
        (log_file or AuditLog()).append([record], entry.conversation)
    except OSError as exc:
        log.warning("the audit log could not be written: %s", exc)


__all__ = [
    "DENIED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "REQUEST_TIMEOUT",
    "Audited",
    "Refusal",
    "audit",
    "bounded",
    "over_cap",
]
