"""An image as the projector reads it: a plain value that crosses the worker's pipe."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ImagePixels:
    """One image for the projector: RGB bytes, row after row (`width * height * 3` of them),
    named by the sha256 of the file it was decoded from (the same image, the same KV cache)."""

    sha256: str
    width: int
    height: int
    rgb: bytes = field(repr=False)
