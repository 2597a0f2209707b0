"""A prompt's images, as the worker takes them: found by their sha256, decoded to pixels.

Guarantees: `pictures_of` gives one `ImagePixels` for each `IMAGE_ID` in the prompt ids, in
order — the images of the conversation's messages, in the order they were written — or raises
`InvalidInputError` saying which image is missing or why the prompt and the images disagree
(a message whose own text spells the image marker); nothing is skipped or guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.images import ImagePixels
from app.domain.messages import Conversation
from app.engine.protocol import IMAGE_ID
from app.errors import InvalidInputError
from app.images.decode import pixels
from app.images.kept import find


def pictures_of(conversation: Conversation, prompt: Sequence[int]) -> list[ImagePixels]:
    """The pixels of the prompt's images (see the module guarantees)."""
    images = [c for m in conversation.messages for c in m.images]
    places = sum(1 for t in prompt if t == IMAGE_ID)
    if places != len(images):
        raise InvalidInputError(
            f"the prompt has {places} places for images and the conversation {len(images)}"
            " images: a message's text holds the character U+E0F0, which marks an image"
        )
    out: list[ImagePixels] = []
    for number, image in enumerate(images, 1):
        picture = find(image.sha256, image.name)
        if picture is None:
            called = image.name or f"image {number}"
            raise InvalidInputError(f"{called} is no longer kept on this computer; attach it again")
        out.append(pixels(picture))
    return out


__all__ = ["pictures_of"]
