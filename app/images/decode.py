"""An image file checked and decoded before anything else sees it (Pillow, with limits).

Guarantees:
- `read` takes a file's bytes and gives a `Picture` (the bytes, their sha256, format, size) or
  raises `ImageError` with one sentence saying what is wrong: not an image, a format the app
  does not take, a file over `MAX_BYTES` (refused unread), a picture over `MAX_SIDE` a side or
  `budget.MAX_PIXELS` in all — or over what a request's `ImageBudget` has left — with the
  figures, checked from the header before any pixel is decoded (a JPEG of up to four times that
  is decoded at half size, and held to it); a request's budget is charged what was decoded; an
  animated image; a truncated or damaged file (the whole picture is decoded once to find out);
  one that takes longer than `helper.DECODE_SECONDS` or more memory than the helper may use;
- every parse and decode runs in the bounded helper process (`app/images/helper.py`): the app's
  process never runs an image decoder, and decodes one image at a time however many requests
  come at once;
- `pixels` gives the RGB rows the projector reads, transparency laid on white, scaled down to at
  most `FIT_SIDE` on the long side (a projector resizes to its own input anyway);
- `thumbnail` gives a small PNG of it for lists and previews.
Nothing here imports Qt or llama.cpp: the window, the terminal chat and the server share it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from app.domain.images import ImagePixels
from app.domain.messages import ImageContent
from app.errors import InvalidInputError
from app.images import helper
from app.images.budget import MAX_PIXELS, ImageBudget, megapixels
from app.images.decoder import MAX_SIDE

MAX_BYTES = 50 << 20  # a file larger than this is refused unread
FIT_SIDE = 2048  # the pixels a projector gets, at most, on the long side
FORMATS = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
    "BMP": "image/bmp",
}
_TAKEN = "PNG, JPEG, WebP, GIF and BMP"


class ImageError(InvalidInputError):
    """A file that cannot be shown to a model as an image, and why."""


@dataclass(frozen=True)
class Picture:
    """A checked image file: its bytes and what the conversation records of it."""

    data: bytes = field(repr=False)
    sha256: str
    mime: str
    width: int
    height: int
    name: str = ""

    def content(self) -> ImageContent:
        """The message content that stands for it."""
        return ImageContent(
            sha256=self.sha256,
            mime=self.mime,
            width=self.width,
            height=self.height,
            name=self.name,
        )


def _too_large(called: str, width: int, height: int) -> str:
    return (
        f"{called}is too large a picture: {width:,} × {height:,} pixels"
        f" ({megapixels(width * height)} megapixels); images up to {MAX_SIDE:,} pixels a side"
        f" and {megapixels(MAX_PIXELS)} megapixels (4,096 × 4,096) are taken, a JPEG up to"
        f" {megapixels(4 * MAX_PIXELS)} (read at half size)"
    )


def _refusal(said: dict[str, object], called: str, budget: ImageBudget | None) -> str:
    """The sentence for a helper's refusal of kind `said["kind"]`."""
    kind = said.get("kind")
    if kind == "too_large":
        width, height = int(str(said["width"])), int(str(said["height"]))
        if said.get("over") == "request" and budget is not None:
            return budget.over(called, width, height)
        return _too_large(called, width, height)
    sentences = {
        "unknown": f"{called}is not an image Harmony Desk can read (PNG, JPEG, WebP, GIF or BMP)",
        "format": f"{called}is a {said.get('format')} image; {_TAKEN} are taken",
        "empty": f"{called}has no pixels",
        "animated": f"{called}is animated; attach a still image (one frame of it, as PNG)",
        "damaged": f"{called}is damaged or cut short and cannot be decoded",
        "memory": f"{called}needs more memory to decode than an image may use",
        "stopped": f"{called}could not be decoded within {helper.DECODE_SECONDS:g} s and was"
        " stopped",
    }
    return sentences.get(str(kind), f"{called}could not be decoded: the image helper did not start")


def _asked(op: str, data: bytes, called: str, **more: int) -> tuple[dict[str, object], bytes]:
    """The helper's answer for a good image, else the `ImageError` that says what is wrong."""
    said, payload = helper.ask({"op": op, **more}, data, MAX_PIXELS)
    if "kind" in said:
        raise ImageError(_refusal(said, called, None), str(said.get("error", "")))
    return said, payload


def read(data: bytes, name: str = "", budget: ImageBudget | None = None) -> Picture:
    """`data` checked as an image (see the module guarantees); `budget`: what the request it
    came in may still decode, charged when it is taken."""
    called = f"{name} " if name else "the image "
    if not data:
        raise ImageError(f"{name or 'the file'} is empty, not an image")
    if len(data) > MAX_BYTES:
        raise ImageError(
            f"{called}is {len(data) >> 20} MiB; images up to {MAX_BYTES >> 20} MiB are taken"
        )
    full = budget.full(called) if budget is not None else None
    if full is not None:
        raise ImageError(full)
    most = budget.most() if budget is not None else MAX_PIXELS
    said, _ = helper.ask({"op": "check", "most": most}, data, MAX_PIXELS)
    if "kind" in said:
        raise ImageError(_refusal(said, called, budget), str(said.get("error", "")))
    width, height = int(str(said["width"])), int(str(said["height"]))
    if budget is not None:
        budget.take(int(str(said.get("pixels", width * height))))
    digest = hashlib.sha256(data).hexdigest()
    return Picture(data, digest, FORMATS[str(said["format"])], width, height, name)


def pixels(picture: Picture) -> ImagePixels:
    """The RGB rows of a checked picture for the projector (see the module guarantees)."""
    called = f"{picture.name} " if picture.name else "the image "
    said, rgb = _asked("pixels", picture.data, called, side=FIT_SIDE)
    width, height = int(str(said["width"])), int(str(said["height"]))
    if len(rgb) != width * height * 3:
        raise ImageError(f"{called}could not be decoded: the image helper's rows were cut short")
    return ImagePixels(picture.sha256, width, height, rgb)


def thumbnail(picture: Picture, side: int = 160) -> bytes:
    """A PNG of the picture at most `side` pixels on the long side."""
    called = f"{picture.name} " if picture.name else "the image "
    return _asked("thumbnail", picture.data, called, side=side)[1]


__all__ = [
    "FIT_SIDE",
    "FORMATS",
    "MAX_BYTES",
    "ImageError",
    "Picture",
    "pixels",
    "read",
    "thumbnail",
]
