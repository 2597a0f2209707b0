"""Images a client sends the server: `data:` URLs read into the pictures the model sees.

Guarantees: only a `data:` URL is read (base64, or percent-encoded) — an `http(s)` or any other
URL is a 400 that says the server never fetches one (it works offline), and a file id a 400
that says it keeps no files; the bytes are checked by the app's one image decoder
(`app.images.decode.read`, in its bounded helper process: not an image, damaged or cut short,
animated, over the limits), its sentence the 400's message, the part at fault its `param`
(`code: "invalid_image"`); each request has one `ImageBudget` (`request_images`, opened by the
guard for every request): past `MAX_REQUEST_IMAGES` images, or `MAX_REQUEST_PIXELS` decoded
pixels in all, an image is a 400 with the figures, its pixels refused from its header before
any is decoded; a checked picture is held for this run (`app.images.kept.remember`), so the
engine finds it by its sha256. A model that reads text only (no projector loaded) refuses
images with a 400 that says how to load it to see them.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar
from urllib.parse import unquote_to_bytes

from app.domain.messages import ImageContent
from app.images.budget import ImageBudget
from app.images.decode import ImageError, read
from app.images.kept import remember
from app.server.errors import ApiError

_DATA_URL = re.compile(r"data:(?P<mime>[^,;]*)(?P<params>(?:;[^,;]*)*),", re.I)
_SPACE = re.compile(r"\s+")
_BUDGET: ContextVar[ImageBudget | None] = ContextVar("request_images", default=None)


@contextlib.contextmanager
def request_images() -> Iterator[ImageBudget]:
    """One request's image budget, for every image read while it is open (the guard opens it
    around each request; the conversion's thread inherits it)."""
    budget = ImageBudget()
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def text_only(model: str, param: str, what: str = "images") -> ApiError:
    """The 400 for an image sent to a model that reads text only."""
    return ApiError(
        400,
        f"{what} are not supported by {model}: this model reads text only; load it with its"
        " projector (serve --projector FILE, an mmproj GGUF) to send images",
        param=param,
        code="unsupported_content",
    )


def not_fetched(url: str, param: str) -> ApiError:
    """The 400 for an image given by a URL the server would have to fetch."""
    scheme = url.split(":", 1)[0][:16] if ":" in url else ""
    what = f"an {scheme} URL" if scheme.lower() in ("http", "https") else "a URL"
    return ApiError(
        400,
        f"the image is {what}: this server works offline and never fetches one; send the"
        " image's bytes as a data: URL (data:image/png;base64,...)",
        param=param,
        code="invalid_image_url",
    )


def no_files(param: str) -> ApiError:
    """The 400 for an image given by a file id (this server keeps no uploaded files)."""
    return ApiError(
        400,
        "images by file id are not supported: this server keeps no files; send the image's"
        " bytes as a data: URL (data:image/png;base64,...)",
        param=param,
        code="invalid_image_url",
    )


def _bytes_of(url: str, param: str) -> bytes:
    """The bytes a `data:` URL carries (a 400 naming `param` when it is none)."""
    head = _DATA_URL.match(url)
    if head is None:
        if url[:5].lower() != "data:":
            raise not_fetched(url, param)
        raise ApiError(
            400,
            "the image's data: URL has no comma before its data (data:image/png;base64,...)",
            param=param,
            code="invalid_image_url",
        )
    payload = url[head.end() :]
    if ";base64" not in head["params"].lower():
        return unquote_to_bytes(payload)
    try:
        return base64.b64decode(_SPACE.sub("", payload), validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(
            400,
            "the image's data: URL is not valid base64",
            param=param,
            code="invalid_image",
        ) from None


def image_of(url: object, param: str) -> ImageContent:
    """The picture a `data:` URL carries, checked and held for this run (see the module
    guarantees); `param` names the part, for errors."""
    if not isinstance(url, str) or not url:
        raise ApiError(
            400, "an image needs its data: URL (a string)", param=param, code="invalid_image_url"
        )
    data = _bytes_of(url, param)
    try:
        picture = read(data, budget=_BUDGET.get())
    except ImageError as exc:
        raise ApiError(400, exc.message, param=param, code="invalid_image") from None
    remember(picture)
    return picture.content()


def url_of(part: dict[str, object]) -> object:
    """The URL of a chat `image_url` part: `{"image_url": {"url": ...}}` (or the URL alone)."""
    given = part.get("image_url")
    return given.get("url") if isinstance(given, dict) else given


__all__ = ["image_of", "no_files", "not_fetched", "request_images", "text_only", "url_of"]
