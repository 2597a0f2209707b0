"""A message version's images as the history's `versions.images` column holds them.

Guarantees: the column holds what identifies and describes each image (the JSON of its
`ImageContent`: sha256, type, size, name), never its bytes (those are kept with the attached
files, `app/documents/kept.py`); `read_images` gives back the same values in the same order;
a value that cannot be read (edited or damaged by hand) gives no images and one warning in the
`store` log naming the version, so the conversation's text still opens — the images it lost
are said, rather than the whole conversation refused.
"""

from __future__ import annotations

import logging

from pydantic import TypeAdapter, ValidationError

from app.domain.messages import ImageContent

log = logging.getLogger("store")
IMAGES = TypeAdapter(tuple[ImageContent, ...])


def images_json(images: tuple[ImageContent, ...]) -> str:
    """The column's value for `images`."""
    return IMAGES.dump_json(images).decode() if images else "[]"


def read_images(raw: str | None, version_id: str) -> tuple[ImageContent, ...]:
    """The images of version `version_id` from its column's value (see the guarantees)."""
    if not raw or raw == "[]":
        return ()
    try:
        return IMAGES.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        log.warning(
            "the images of message version %s cannot be read (%s at %s); it opens without them",
            version_id,
            first["msg"],
            ".".join(str(p) for p in first["loc"]) or "the top",
        )
        return ()


__all__ = ["images_json", "read_images"]
