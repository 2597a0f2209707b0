"""What an MCP server returns, as the model and the user read it.

Guarantees: a tool result's text parts are joined, other parts (images, audio, resources) are
named in a notice, structured content is kept when it fits, the server's `is_error` is the
envelope's error, and anything past the limit is cut with a marker that says how much; a read
resource is its text (a binary one is a notice); a prompt is its messages' text, by role. Every
value the app knows is secret (a keyring value, a secret of the app's environment) is
redacted from all of these (`app.domain.redact`, known values only: the rest stays faithful).
"""

from __future__ import annotations

import json
from typing import Any

from app.domain.redact import redact, redact_data
from app.errors import ErrorCode

MAX_RESULT_CHARS = 20_000


def _cut(text: str, limit: int) -> str:
    text = redact(text, shapes=False)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[cut: {len(text) - limit} more characters]"


def _part_text(part: Any) -> str:
    kind = getattr(part, "type", "")
    if kind == "text":
        return str(part.text)
    if kind == "resource" and hasattr(getattr(part, "resource", None), "text"):
        return str(part.resource.text)
    mime = getattr(part, "mime_type", "") or "no type"
    return f"[{kind or 'a part'} ({mime}) left out: only text reaches the model]"


def envelope(result: Any, limit: int = MAX_RESULT_CHARS) -> dict[str, Any]:
    """A tool result as the model reads it (see the module guarantees)."""
    text = _cut("\n".join(_part_text(p) for p in getattr(result, "content", None) or ()), limit)
    if getattr(result, "is_error", False):
        return {"ok": False, "error": {"code": ErrorCode.TOOL_ERROR.value, "message": text}}
    structured = redact_data(getattr(result, "structured_content", None), shapes=False)
    if structured is not None and len(json.dumps(structured, ensure_ascii=False)) <= limit:
        return {"ok": True, "content": structured}
    return {"ok": True, "content": text}  # the text, cut where it had to be


def resource_text(result: Any, limit: int = MAX_RESULT_CHARS) -> str:
    """A read resource's text (each binary part named in a notice), cut at `limit`."""
    parts = []
    for item in getattr(result, "contents", None) or ():
        if hasattr(item, "text"):
            parts.append(str(item.text))
        else:
            parts.append(f"[{getattr(item, 'mime_type', None) or 'binary'} content left out]")
    return _cut("\n".join(parts), limit)


def prompt_messages(result: Any) -> list[tuple[str, str]]:
    """A prompt's messages as (role, text)."""
    messages = getattr(result, "messages", None) or ()
    return [(str(m.role), redact(_part_text(m.content), shapes=False)) for m in messages]


__all__ = ["MAX_RESULT_CHARS", "envelope", "prompt_messages", "resource_text"]
