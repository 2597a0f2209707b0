"""The image helper process: where a file's bytes are parsed and decoded, under hard limits.

Runs `serve(conn, memory_mb, max_pixels)` in its own OS process (started by
`app/images/helper.py`); nothing in the app's process parses or decodes an image's bytes.
Guarantees:
- only the PNG, JPEG, WebP, GIF and BMP parsers ever read the bytes (`Image.open(formats=…)`):
  no other Pillow plugin (TIFF, EPS, PSD, …) is tried;
- an image's dimensions are read from its header and checked against the bound the request names
  (`most`, never more than `max_pixels`) and `MAX_SIDE` before any pixel is decoded — a JPEG of
  up to four times the bound is decoded at half size (libjpeg scales as it decodes: a phone's 24
  or 48 megapixel photo), the bound held by what is decoded; Pillow's own decompression-bomb
  guard is set to `max_pixels` as well, and an image it flags is re-read header-only for the
  checks above (and its refusal's figures), never decoded past them;
- the kernel bounds what no check can: the address space is capped at `memory_mb` over what the
  process holds once ready (`RLIMIT_AS`: a larger allocation is a `MemoryError`, answered as
  kind "memory"), and before each request its CPU time a few seconds past what it has used
  (`RLIMIT_CPU`, a backstop: the app kills it at its wall deadline first);
- every request gets one answer: a JSON head (never a pickle either way: the app does not
  unpickle what an image's bytes could influence), then the payload when the head has
  `"payload": true`. A head is `{"format", "width", "height", "pixels"}` (the header's size, the
  pixels decoded) for a good image, else `{"kind", …}`: "unknown" (no image), "format" (an image
  of another format, named by its first bytes: no parser reads it), "empty", "too_large" (with
  the claimed `width` and `height`, and `over`: "image" past the bound on its own, else
  "request"), "animated", "damaged" (with `error`), "memory".
"""

from __future__ import annotations

import io
import json
import warnings
from multiprocessing.connection import Connection
from typing import Any

from app.rlimits import limit_cpu, limit_memory

FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")  # the parsers that may read the bytes
_JPEGS = ("JPEG", "MPO")  # MPO: a camera's JPEG with more pictures after it; the first is read
_OTHERS = (  # formats named by their first bytes, for the refusal (no parser reads them)
    (b"II*\0", "TIFF"),
    (b"MM\0*", "TIFF"),
    (b"8BPS", "PSD"),
    (b"\0\0\1\0", "ICO"),
    (b"%!PS", "EPS"),
    (b"\xc5\xd0\xd3\xc6", "EPS"),
    (b"\0\0\0\x0cjP  ", "JPEG 2000"),
    (b"\xff\x0a", "JPEG XL"),
    (b"\0\0\0\x0cJXL ", "JPEG XL"),
    (b"qoif", "QOI"),
)
MAX_SIDE = 16_384  # pixels on either side
CPU_MARGIN_S = 10  # RLIMIT_CPU past the time used so far (the wall deadline comes first)
Head = dict[str, Any]


def _header_only(data: bytes) -> Any:
    """The image with Pillow's guard lifted, for the figures of a refusal (never decoded)."""
    from PIL import Image

    bound = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = None
    try:
        return Image.open(io.BytesIO(data), formats=FORMATS)
    finally:
        Image.MAX_IMAGE_PIXELS = bound


def _unknown(data: bytes) -> Head:
    """The refusal of bytes no allowed parser reads: their format named when its first bytes
    say it (`ftyp` boxes: HEIC, AVIF), else none."""
    named = next((name for magic, name in _OTHERS if data.startswith(magic)), None)
    if data[4:8] == b"ftyp":
        brand = data[8:12]
        named = (
            "AVIF"
            if brand.startswith(b"avi")
            else "HEIC"
            if brand[:3] in (b"hei", b"mif")
            else None
        )
    return {"kind": "format", "format": named} if named else {"kind": "unknown"}


def _scale(kind: str | None, width: int, height: int, bound: int) -> int | None:
    """1 when `width` × `height` fits `bound` pixels; 2 for a JPEG that fits it decoded at half
    size (libjpeg scales as it decodes, so the full size is never held); None otherwise."""
    if width * height <= bound:
        return 1
    if kind in _JPEGS and -(-width // 2) * -(-height // 2) <= bound:
        return 2
    return None


def _opened(data: bytes, most: int, max_pixels: int) -> Any:
    """The lazily opened image (its header read, no pixel decoded) and the size its header
    says, or the refusal's head."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            try:
                image = Image.open(io.BytesIO(data), formats=FORMATS)
            except (Image.DecompressionBombError, Image.DecompressionBombWarning):
                image = _header_only(data)
    except UnidentifiedImageError:
        return _unknown(data)
    except (OSError, ValueError, SyntaxError) as exc:
        return {"kind": "damaged", "error": str(exc)[:500]}
    width, height = image.size
    if width < 1 or height < 1:
        return {"kind": "empty"}
    scale = _scale(image.format, width, height, most) if max(width, height) <= MAX_SIDE else None
    if scale is None:
        alone = max(width, height) <= MAX_SIDE and _scale(image.format, width, height, max_pixels)
        over = "request" if alone else "image"
        return {"kind": "too_large", "width": width, "height": height, "over": over}
    if scale == 2:
        image.draft(image.mode, (width // 2, height // 2))
    return image, (width, height)


def _decoded(data: bytes, most: int, max_pixels: int) -> Any:
    """The whole picture decoded once and its declared size (the refusal's head when it
    cannot be)."""
    opened = _opened(data, most, max_pixels)
    if isinstance(opened, dict):
        return opened
    image, _ = opened
    if image.format not in _JPEGS and getattr(image, "is_animated", False):
        return {"kind": "animated"}
    try:
        image.load()
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        return {"kind": "damaged", "error": str(exc)[:500]}
    return opened


def _rgb(image: Any, side: int) -> Any:
    """RGB at most `side` a side; transparency laid on white (scaled first: less to compose)."""
    from PIL import Image

    alpha = image.mode in ("RGBA", "LA", "P", "PA") or "transparency" in image.info
    mode = "RGBA" if alpha else "RGB"
    if image.mode != mode:
        image = image.convert(mode)
    if max(image.size) > side:
        image.thumbnail((side, side), Image.Resampling.LANCZOS)
    if not alpha:
        return image
    white = Image.new("RGBA", image.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, image).convert("RGB")


def answer(head: Head, data: bytes, max_pixels: int) -> tuple[Head, bytes | None]:
    """One request's answer: its head, and the payload when there is one."""
    most = min(int(head.get("most", max_pixels)), max_pixels)
    decoded = _decoded(data, most, max_pixels)
    if isinstance(decoded, dict):
        return decoded, None
    image, (width, height) = decoded
    facts = {
        "format": "JPEG" if image.format in _JPEGS else image.format,
        "width": width,
        "height": height,
        "pixels": image.width * image.height,  # decoded: a large JPEG's at half size
    }
    if head.get("op") == "check":
        return facts, None
    side = int(head.get("side", 2048))
    rows = _rgb(image, side)
    if head.get("op") == "pixels":
        return {
            **facts,
            "width": rows.width,
            "height": rows.height,
            "payload": True,
        }, rows.tobytes()
    out = io.BytesIO()
    rows.save(out, "PNG")
    return {**facts, "payload": True}, out.getvalue()


def serve(conn: Connection, memory_mb: int, max_pixels: int) -> None:
    """Process entry point: answer requests (a JSON head, then the bytes) until the pipe
    closes (see the module guarantees)."""
    from PIL import Image, features  # noqa: F401 - imported before the address space is measured

    Image.MAX_IMAGE_PIXELS = max_pixels
    Image.init()
    limit_memory(memory_mb)
    conn.send_bytes(b'{"ready": true}')
    while True:
        try:
            head, data = json.loads(conn.recv_bytes()), conn.recv_bytes()
        except (EOFError, OSError, ValueError):
            return
        limit_cpu(CPU_MARGIN_S)
        try:
            said, payload = answer(head, data, max_pixels)
        except MemoryError:
            said, payload = {"kind": "memory"}, None
        del data
        conn.send_bytes(json.dumps(said).encode())
        if payload is not None:
            conn.send_bytes(payload)


__all__ = ["FORMATS", "MAX_SIDE", "answer", "serve"]
