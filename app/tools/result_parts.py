"""A tool's text result that carries the images the tool returned beside it.

Guarantees: a `TextWithImages` is a `str` — JSON, the audit, the tool card and every reader of
a result take it as its text, in which each image stands as a label (`image_label`: "[image 1:
pics://dot (image/png, 1.2 KiB)]") where the tool returned it; its `images` hold each image's
name, MIME type and bytes, in the order the labels number them. The bytes are what the tool
sent, unchecked: the turn checks them as an image (`app.images.decode`) before any model sees
them, and names them in a notice to a model that reads text only.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ToolImage:
    """One image a tool returned: what names it (a resource's URI, or ""), its MIME type and
    its bytes."""

    name: str
    mime: str
    data: bytes = field(repr=False)


class TextWithImages(str):
    """A tool's text with its `images` (see the module guarantees)."""

    images: tuple[ToolImage, ...]

    def __new__(cls, text: str, images: tuple[ToolImage, ...] = ()) -> TextWithImages:
        made = super().__new__(cls, text)
        made.images = images
        return made


def image_label(number: int, image: ToolImage) -> str:
    """How image `number` stands in the result's text: "[image 1: pics://dot (image/png, 1.2
    KiB)]" ("[image 1 (image/png, 1.2 KiB)]" when nothing names it)."""
    said = f"{image.mime or 'no type'}, {size_text(len(image.data))}"
    return f"[image {number}{f': {image.name}' if image.name else ''} ({said})]"


def size_text(size: int) -> str:
    """A size in words: "812 bytes", "12.3 KiB", "1.5 MiB"."""
    if size < 1 << 10:
        return f"{size} bytes"
    if size < 1 << 20:
        return f"{size / (1 << 10):.1f} KiB"
    return f"{size / (1 << 20):.1f} MiB"


__all__ = ["TextWithImages", "ToolImage", "image_label", "size_text"]
