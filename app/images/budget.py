"""What images cost to decode, bounded: per image, and per request of the local server.

The bounds are what a projector can use, with room: a projector scales every image down to its
own input (Gemma 3's 896 × 896, Qwen2.5-VL's few megapixels at most) and the app hands it at
most `FIT_SIDE` (2,048) pixels a side, so an image of more than `MAX_PIXELS` (4,096 × 4,096 =
16.8 megapixels) would cost its decoding (about 64 MiB of RGBA and a quarter of a second; an
8,000 × 8,000 one a gigabyte and seconds) for nothing the model sees. One request of the local
server may hold `MAX_REQUEST_IMAGES` images and `MAX_REQUEST_PIXELS` (67.1 megapixels: four
of the largest) in all.

Guarantees: `ImageBudget.full` refuses an image past the count before its bytes are parsed,
`most` is the most pixels the next image may have (what the request has left, never more than
`MAX_PIXELS`), `take` charges a checked image, and every refusal is one sentence with the
figures (the image's, the bound's, what the images before it took).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PIXELS = 4096 * 4096  # width × height of one image
MAX_REQUEST_IMAGES = 16  # images in one request of the local server
MAX_REQUEST_PIXELS = 4 * MAX_PIXELS  # width × height of a request's images, in all


def megapixels(pixels: int) -> str:
    """`pixels` in megapixels, as a refusal says them (`16.8`)."""
    return f"{pixels / 1_000_000:.1f}"


@dataclass
class ImageBudget:
    """What one request may still decode (see the module guarantees)."""

    images: int = MAX_REQUEST_IMAGES
    pixels: int = MAX_REQUEST_PIXELS
    taken_images: int = 0
    taken_pixels: int = 0

    def full(self, called: str) -> str | None:
        """Why one more image is refused when the request holds its most images already, else
        None (`called`: how the image is named, "the image " when it has no name)."""
        if self.taken_images < self.images:
            return None
        return (
            f"{called}is image {self.taken_images + 1} of this request; one request may hold"
            f" {self.images} images: send fewer"
        )

    def most(self) -> int:
        """The most pixels the next image may have."""
        return max(0, min(MAX_PIXELS, self.pixels - self.taken_pixels))

    def over(self, called: str, width: int, height: int) -> str:
        """Why an image of `width` × `height` that fits `MAX_PIXELS` is refused all the same."""
        return (
            f"{called}is {width:,} × {height:,} pixels ({megapixels(width * height)} megapixels),"
            f" past what one request may hold: {megapixels(self.pixels)} megapixels of images"
            f" in all, of which the {self.taken_images} before it took"
            f" {megapixels(self.taken_pixels)}; send fewer or smaller images"
        )

    def take(self, pixels: int) -> None:
        """Charge a checked image of `pixels`."""
        self.taken_images += 1
        self.taken_pixels += pixels


__all__ = [
    "MAX_PIXELS",
    "MAX_REQUEST_IMAGES",
    "MAX_REQUEST_PIXELS",
    "ImageBudget",
    "megapixels",
]
