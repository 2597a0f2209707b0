"""What a transcript may show an end user, and what a tool reply says.

Renderer policy (OpenChatML §4, §5, §11): user messages, final answers and commentary flagged
`intent=preamble` are shown; system, developer, analysis, other commentary and tool traffic
are hidden. `display_text` on a hidden message raises `VisibilityError` (E-PERM-VISIBILITY):
code that tries to show a hidden channel fails loudly instead of leaking it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.domain.visibility import is_tool_recipient
from app.errors import ErrorCode, HarmonyDeskError
from app.harmony.ocm.model import OcmMessage


class VisibilityError(HarmonyDeskError):
    """An attempt to display a hidden message."""

    code = ErrorCode.PERM_VISIBILITY


def is_visible(message: OcmMessage) -> bool:
    """True when an end user may see this message's text."""
    if message.role == "user":
        return True
    if message.role != "assistant" or message.is_call or is_tool_recipient(message.recipient):
        return False
    if message.channel == "final":
        return True
    return message.channel == "commentary" and message.intent == "preamble"


def display_text(message: OcmMessage) -> str:
    """The text to show an end user; `VisibilityError` for a hidden message."""
    if not is_visible(message):
        where = message.channel or message.role
        raise VisibilityError(f"a {message.role} message on {where!r} is hidden from end users")
    return message.text


@dataclass(frozen=True)
class ToolReply:
    """The recommended reply envelope: `{"ok", "content", "error", "provenance"}`."""

    ok: bool
    content: Any = None
    error: Any = None
    error_code: ErrorCode | None = None
    provenance: Any = None


def tool_reply(message: OcmMessage) -> ToolReply | None:
    """The reply envelope of a tool message, or None when its body is not one."""
    try:
        body = json.loads(message.text)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("ok"), bool):
        return None
    error = body.get("error")
    code_text = error.get("code") if isinstance(error, dict) else error
    codes = {c.value: c for c in ErrorCode}
    return ToolReply(
        ok=body["ok"],
        content=body.get("content"),
        error=error,
        error_code=codes.get(code_text) if isinstance(code_text, str) else None,
        provenance=body.get("provenance"),
    )
