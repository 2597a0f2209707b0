"""A call whose arguments do not fit its tool's schema, as the model reads it: why, and once per
tool and turn an invitation to send a repaired call.

Guarantees: `said_of` puts a pydantic validation error as `/path: message` items (no library
preamble, no links); `Repairs.read` leaves every outcome but an E-CALL-SCHEMA one of a known tool
as it is, and adds to that one's message a request to call again with arguments that fit — the
first `REPAIRS` times for that tool in the turn — then that the arguments were not repaired and
the tool is not to be called again this turn. Only what the model reads changes: the turn's
records keep the outcome as it was.
"""

from __future__ import annotations

import collections
import dataclasses

from pydantic import ValidationError

from app.domain.events import CallOutcome
from app.errors import ErrorCode
from app.tools.api import Tool

REPAIRS = 1  # times a turn a tool's call that does not fit its schema is sent back to repair


def said_of(exc: ValidationError) -> str:
    """Each problem as `/path: message` (what the model reads to repair the call)."""
    return "; ".join(
        f"/{'/'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
        for e in exc.errors()
    )


class Repairs:
    """One turn's count of calls that did not fit, per tool."""

    def __init__(self) -> None:
        self.failed: collections.Counter[str] = collections.Counter()

    def read(self, outcome: CallOutcome, tool: Tool | None) -> CallOutcome:
        """`outcome` as the model reads it (see the module guarantees)."""
        if tool is None or outcome.ok or outcome.error_code != ErrorCode.CALL_SCHEMA.value:
            return outcome
        name = tool.qualified_name
        self.failed[name] += 1
        if self.failed[name] <= REPAIRS:
            ask = f"Call {name} once more with arguments that fit its schema."
        else:
            ask = (
                f"The arguments were not repaired: do not call {name} again in this turn;"
                " answer without it, and say why."
            )
        said = (outcome.error or "the arguments do not fit the tool").rstrip(". ")
        return dataclasses.replace(outcome, error=f"{said}. {ask}")


__all__ = ["REPAIRS", "Repairs", "said_of"]
