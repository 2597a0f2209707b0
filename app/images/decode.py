"""An image file checked and decoded before anything else sees it (Pillow, with limits).

Guarantees:
- `read` takes a file's bytes and gives a `Picture` (the bytes, their sha256, format, size) or
  raises `ImageError` with one sentence saying what is wrong: not an image, a format the app
  does not take, a file or picture over the limits (`MAX_BYTES`, `MAX_SIDE`, `MAX_PIXELS`,
  checked from the header before any pixel is decoded), an animated image, a truncated or
  damaged file (the whole picture is decoded once to find out);
- `pixels` gives the RGB rows the projector reads, transparency laid on white, scaled down to
  at most `FIT_SIDE` on the long side (a projector resizes to its own input anyway);
- `thumbnail` gives a small PNG of it for lists and previews.
Nothing here imports Qt or llama.cpp: the window, the terminal chat and the server share it.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass, field

from app.domain.images import ImagePixels
from app.domain.messages import ImageContent
from app.errors import InvalidInputError

MAX_BYTES = 50 << 20  # a file larger than this is refused unread
MAX_SIDE = 16_384  # pixels on either side
MAX_PIXELS = 64_000_000  # width × height
FIT_SIDE = 2048  # the pixels a projector gets, at most, on the long side
FORMATS = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
    "BMP": "image/bmp",
}


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


def _open(data: bytes, name: str) -> object:
    from PIL import Image, UnidentifiedImageError

    called = f"{name} " if name else "the file "
    if not data:
        raise ImageError(f"{called}is empty, not an image")
    if len(data) > MAX_BYTES:
        raise ImageError(
            f"{called}is {len(data) >> 20} MiB; images up to {MAX_BYTES >> 20} MiB are taken"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return Image.open(io.BytesIO(data))
    except (
        UnidentifiedImageError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as exc:
        if isinstance(exc, UnidentifiedImageError):
            raise ImageError(
                f"{called}is not an image Harmony Desk can read (PNG, JPEG, WebP, GIF or BMP)"
            ) from exc
        raise ImageError(
            f"{called}is too large a picture: images up to {MAX_SIDE:,} pixels a"
            f" side and {MAX_PIXELS // 1_000_000} megapixels are taken"
        ) from exc
    except (OSError, ValueError) as exc:
        raise ImageError(f"{called}is damaged and cannot be read as an image", str(exc)) from exc


def read(data: bytes, name: str = "") -> Picture:
    """`data` checked as an image (see the module guarantees)."""
    from PIL import Image

    called = f"{name} " if name else "the image "
    image = _open(data, name)
    assert isinstance(image, Image.Image)
    mime = FORMATS.get(image.format or "")
    if mime is None:
        raise ImageError(
            f"{called}is a {image.format} image; PNG, JPEG, WebP, GIF and BMP are taken"
        )
    width, height = image.size
    if width < 1 or height < 1:
        raise ImageError(f"{called}has no pixels")
    if max(width, height) > MAX_SIDE or width * height > MAX_PIXELS:
        raise ImageError(
            f"{called}is {width:,} × {height:,} pixels; images up to {MAX_SIDE:,} pixels a side"
            f" and {MAX_PIXELS // 1_000_000} megapixels are taken"
        )
    if getattr(image, "n_frames", 1) > 1:
        raise ImageError(f"{called}is animated; attach a still image (one frame of it, as PNG)")
    try:
        image.load()
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageError(
            f"{called}is damaged or cut short and cannot be decoded", str(exc)
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    return Picture(data, digest, mime, width, height, name)


def _decoded(data: bytes) -> object:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    if image.mode in ("RGBA", "LA", "P", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def pixels(picture: Picture) -> ImagePixels:
    """The RGB rows of a checked picture for the projector (see the module guarantees)."""
    from PIL import Image

    image = _decoded(picture.data)
    assert isinstance(image, Image.Image)
    if max(image.size) > FIT_SIDE:
        image.thumbnail((FIT_SIDE, FIT_SIDE), Image.Resampling.LANCZOS)
    width, height = image.size
    return ImagePixels(picture.sha256, width, height, image.tobytes())


def thumbnail(picture: Picture, side: int = 160) -> bytes:
    """A PNG of the picture at most `side` pixels on the long side."""
    from PIL import Image

    image = _decoded(picture.data)
    assert isinstance(image, Image.Image)
    image.thumbnail((side, side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


__all__ = [
    "FIT_SIDE",
    "MAX_BYTES",
    "MAX_PIXELS",
    "MAX_SIDE",
    "ImageError",
    "Picture",
    "pixels",
    "read",
    "thumbnail",
]
