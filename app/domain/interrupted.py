"""Whether an answer was cut short by the app stopping (a crash, a kill) while it streamed.

Guarantees: decided by the reply's state and the error code the store gives such a reply on
reading it back (`E-STREAM-TRUNCATED`), never by a Stop, which says so itself; every frontend
and export says such an answer in the same words (`INTERRUPTED_NOTICE`), as a Stop says its own.
"""

from __future__ import annotations

from app.domain.history import Reply
from app.errors import ErrorCode

INTERRUPTED_NOTICE = (
    "Interrupted: the app stopped while this answer was written. The partial answer is kept."
)


def cut_short(reply: Reply) -> bool:
    """Whether the reply was cut by the app stopping while it streamed."""
    return reply.state == "incomplete" and reply.error.startswith(ErrorCode.STREAM_TRUNCATED.value)


__all__ = ["INTERRUPTED_NOTICE", "cut_short"]
