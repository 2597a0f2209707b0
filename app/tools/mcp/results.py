"""What an MCP server returns, as the model and the user read it.

Guarantees: a tool result's text parts are joined; its images (`ImageContent`, and an embedded
resource whose blob is an image) stand in the text as a label where they came
(`app.tools.result_parts.image_label`) and come with it as a `TextWithImages`, for the turn to
show a model that sees images and to name in a notice to one that does not; other parts (audio,
other binary resources) are named in a notice; structured content is kept when it fits and the
result has no images; the server's `is_error` is the envelope's error. A result is kept whole
up to `MAX_RESULT_CHARS` (what the audit keeps; the turn cuts what the model reads to its share
of the context, `app/engine/turn/results.py`); past it, it is cut with a marker that says how
much. A read resource is its text (a binary one is a notice), or its parts (`resource_parts`:
the text, the binary parts' bytes by type, never more than a size cap in all); a prompt is its
messages' text, by role (`prompt_parts`: with the images it holds); a server's log message is
one line of at most `LOG_CHARS` (`log_line`). Every value the app knows is secret (a keyring
value, a secret of the app's environment) is redacted from all of these (`app.domain.redact`,
known values only: the rest stays faithful).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from app.domain.redact import redact, redact_data
from app.errors import ErrorCode
from app.tools.result_parts import TextWithImages, ToolImage, image_label, size_text

MAX_RESULT_CHARS = 16 << 20  # a result is kept whole up to this (the turn cuts what is read)
LOG_CHARS = 2_000  # of one log message a server sends


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


def _image(part: Any) -> ToolImage | str | None:
    """An image part as a `ToolImage` (a sentence when its data is not base64); None when the
    part is not an image."""
    kind = getattr(part, "type", "")
    source = part.resource if kind == "resource" else part
    mime = str(getattr(source, "mime_type", None) or "")
    data = getattr(source, "blob" if kind == "resource" else "data", None)
    if kind not in ("image", "resource") or not isinstance(data, str):
        return None
    if kind == "resource" and not mime.startswith("image/"):
        return None
    name = str(getattr(source, "uri", "") or "") if kind == "resource" else ""
    try:
        return ToolImage(name, mime, base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return f"[an image ({mime or 'no type'}) left out: its data is not valid base64]"


def _text_and_images(parts: Any) -> tuple[str, tuple[ToolImage, ...]]:
    """The parts' text, each image labelled in its place, and the images."""
    texts: list[str] = []
    images: list[ToolImage] = []
    for part in parts or ():
        image = _image(part)
        if isinstance(image, ToolImage):
            images.append(image)
            texts.append(image_label(len(images), image))
        else:
            texts.append(image if isinstance(image, str) else _part_text(part))
    return "\n".join(texts), tuple(images)


def envelope(result: Any, limit: int = MAX_RESULT_CHARS) -> dict[str, Any]:
    """A tool result as the model reads it (see the module guarantees)."""
    joined, images = _text_and_images(getattr(result, "content", None))
    text = _cut(joined, limit)
    if getattr(result, "is_error", False):
        return {"ok": False, "error": {"code": ErrorCode.TOOL_ERROR.value, "message": text}}
    if images:
        return {"ok": True, "content": TextWithImages(text, images)}
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


@dataclass(frozen=True)
class Parts:
    """What a read resource or a prompt message holds: its text parts (redacted), its binary
    parts as (MIME type, bytes), and a sentence for each part that was not taken."""

    texts: tuple[str, ...] = ()
    blobs: tuple[tuple[str, bytes], ...] = ()
    refused: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """Bytes in all (the text as UTF-8)."""
        return sum(len(t.encode()) for t in self.texts) + sum(len(b) for _, b in self.blobs)


def resource_parts(result: Any, cap: int) -> Parts:
    """A read resource's parts (see `Parts`); a part past `cap` bytes in all is refused."""
    texts: list[str] = []
    blobs: list[tuple[str, bytes]] = []
    refused: list[str] = []
    used = 0
    for item in getattr(result, "contents", None) or ():
        mime = str(getattr(item, "mime_type", None) or "")
        text = getattr(item, "text", None)
        try:
            data = text.encode() if isinstance(text, str) else _blob(item)
        except (binascii.Error, ValueError):
            refused.append(f"a {mime or 'binary'} part that is not valid base64")
            continue
        if used + len(data) > cap:
            refused.append(
                f"a {mime or 'binary'} part of {size_text(len(data))} (past the"
                f" {size_text(cap)} a resource may bring)"
            )
            continue
        used += len(data)
        if isinstance(text, str):
            texts.append(redact(text, shapes=False))
        else:
            blobs.append((mime, data))
    return Parts(tuple(texts), tuple(blobs), tuple(refused))


def _blob(item: Any) -> bytes:
    return base64.b64decode(str(getattr(item, "blob", "") or ""), validate=True)


def prompt_parts(result: Any) -> list[tuple[str, Parts]]:
    """A prompt's messages as (role, parts): text (a text resource's too) and images."""
    out: list[tuple[str, Parts]] = []
    for message in getattr(result, "messages", None) or ():
        part = message.content
        kind = getattr(part, "type", "")
        if kind == "image":
            try:
                data = base64.b64decode(str(part.data), validate=True)
            except (binascii.Error, ValueError):
                out.append((str(message.role), Parts(refused=("an image that is not base64",))))
                continue
            out.append((str(message.role), Parts(blobs=((str(part.mime_type), data),))))
        else:
            out.append((str(message.role), Parts((redact(_part_text(part), shapes=False),))))
    return out


def log_line(params: Any) -> str:
    """A server's log message (`notifications/message`) as one line of its log."""
    data = getattr(params, "data", None)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > LOG_CHARS:
        text = text[:LOG_CHARS] + f" [cut: {len(text) - LOG_CHARS} more characters]"
    logger = getattr(params, "logger", None)
    level = str(getattr(params, "level", "") or "info")
    return f"log {level}{f' ({logger})' if logger else ''}: {text}"


def prompt_messages(result: Any) -> list[tuple[str, str]]:
    """A prompt's messages as (role, text)."""
    messages = getattr(result, "messages", None) or ()
    return [(str(m.role), redact(_part_text(m.content), shapes=False)) for m in messages]


__all__ = [
    "LOG_CHARS",
    "MAX_RESULT_CHARS",
    "Parts",
    "envelope",
    "log_line",
    "prompt_messages",
    "prompt_parts",
    "resource_parts",
    "resource_text",
    "size_text",
]
