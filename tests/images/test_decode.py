"""Image files are checked before anything else sees them (app/images/decode.py): each bad
input has its own clear sentence, limits are read from the header before pixels are decoded,
and what reaches the projector is RGB rows of at most FIT_SIDE a side."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from app.images import decode
from app.images.decode import ImageError, pixels, read, thumbnail


def encoded(image: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def noise(width: int, height: int, mode: str = "RGB", seed: int = 1) -> Image.Image:
    channels = len(mode)
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, channels), dtype=np.uint8), mode)


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims `width` × `height` (its header) with one tiny data chunk."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0"))
            + chunk(b"IEND", b""))  # fmt: skip


def test_a_good_png_is_read_with_what_the_conversation_records() -> None:
    data = encoded(noise(40, 30))
    picture = read(data, "chart.png")
    content = picture.content()
    assert (content.width, content.height, content.mime, content.name) == (40, 30, "image/png",
                                                                           "chart.png")  # fmt: skip
    assert len(content.sha256) == 64 and picture.data == data
    rows = pixels(picture)
    assert (rows.width, rows.height, len(rows.rgb)) == (40, 30, 40 * 30 * 3)
    assert rows.rgb == noise(40, 30).tobytes()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"", "is empty"),
        (b"%PDF-1.7 this is no picture", "is not an image"),
        (encoded(noise(64, 64))[:400], "damaged or cut short"),
        (png_header_only(20_000, 20_000), "too large a picture"),
        (png_header_only(17_000, 10), "16,384 pixels a side"),
        (encoded(noise(8, 8), "TIFF"), "TIFF"),
    ],
    ids=["empty", "not-an-image", "truncated-png", "20000x20000", "too-wide", "tiff"],
)
def test_each_bad_file_has_its_own_sentence(data: bytes, said: str) -> None:
    with pytest.raises(ImageError) as caught:
        read(data, "upload.bin")
    assert said in caught.value.message and "upload.bin" in caught.value.message


def test_an_animated_gif_is_refused_and_a_still_one_taken() -> None:
    frames = [noise(16, 16, seed=s).convert("P") for s in range(3)]
    animated = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=50)
    with pytest.raises(ImageError, match="animated"):
        read(animated, "dance.gif")
    still = read(encoded(frames[0], "GIF"), "still.gif")
    assert still.mime == "image/gif" and len(pixels(still).rgb) == 16 * 16 * 3


def test_a_file_over_the_byte_limit_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "MAX_BYTES", 1000)
    with pytest.raises(ImageError, match="MiB"):
        read(encoded(noise(64, 64)), "big.png")


def test_transparency_is_laid_on_white_and_large_pictures_scaled_to_fit() -> None:
    clear = Image.new("RGBA", (4, 4), (10, 20, 30, 0))
    rows = pixels(read(encoded(clear)))
    assert rows.rgb[:3] == b"\xff\xff\xff"
    wide = pixels(read(encoded(noise(decode.FIT_SIDE * 2, 64))))
    assert (wide.width, wide.height) == (decode.FIT_SIDE, 32)
    small = Image.open(io.BytesIO(thumbnail(read(encoded(noise(400, 200))), side=100)))
    assert small.size == (100, 50) and small.format == "PNG"
