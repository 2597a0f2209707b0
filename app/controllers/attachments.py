"""The window's attachments: files a message carries, made into its context on the engine
thread, then sent like any message.

Guarantees: the files are read, chunked and measured off the GUI thread, on the engine thread (the
model's tokenizer answers there); the budget is the context left after the conversation, the
message, the answer's reserve and a follow-up exchange (`follow_up_room`: the answer's reserve
again, for the answer once it is in the history, and `FOLLOW_UP` tokens), so the chat can always go
on under any overflow policy; the message with its attachments is counted whole as it will be sent
and passages dropped until that room is left; what each file became is said before the turn starts
(the controller's `notice`, which the window shows) and returned for the composer's chips; a file
that cannot be read is said and the message is still sent; with a remote endpoint the tokens are
estimated at four characters each. A conversation that uses the documents library sends every
message this way: it carries the library's passages. The files are kept with the conversation (one
copy per content, `app/documents/kept.py`) once the message is in the history; `kept_of` and
`viewable` let the user open them again from the message. `library` lists the indexed documents the
composer's `@` offers (the library refreshed first). Importing this module loads nothing of
`app.documents` (numpy, the extractors): each function loads what it uses.

Images: `check_image` reads an attached, dropped or pasted image and checks it
(`app.images.decode.read`: a bad one raises `ImageError` with its one sentence) before the
composer takes it — call it off the GUI thread; `keep_images` keeps a message's images with its
version (their bytes stored once by content, like its files), so exports carry them;
`keep_tool_images` keeps the images a reply's tools returned the same way, under the reply's id,
so that a conversation reopened after a restart shows them to the model again;
`thumbnail_of` and `image_bytes` find a message's image again by its sha256 (None when it is no
longer kept here: the transcript says so, nothing is guessed).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.controllers.fit import FOLLOW_UP, Counted, conversation_session, follow_up_room
from app.domain.attachments import ESTIMATED_CONTEXT, estimate, estimated_room
from app.domain.messages import ImageContent, Message, Role
from app.errors import InvalidInputError
from app.paths import cache_dir

if TYPE_CHECKING:  # the documents package (numpy, extractors) loads at the first attachment
    from PySide6.QtCore import SignalInstance

    from app.documents.attach import Attached
    from app.documents.index import DocumentIndex
    from app.domain.history import Reply, Version
    from app.images.decode import Picture as Picture  # the window's images are these

# what the composer takes as an image (by its name; the content is checked all the same)
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".jfif", ".webp", ".gif", ".bmp"})
MEASURES = 3  # times the attachments are counted again as sent, and fewer chosen


class Sending(Counted, Protocol):
    """What sending with attachments needs of the chat controller: counting against the
    context, a notice, the send (passed in: never imported here)."""

    @property
    def notice(self) -> SignalInstance: ...

    def send(self, text: str, images: Sequence[Picture] = ()) -> bool: ...


def _attached(controller: Sending, files: Sequence[Path], text: str) -> Attached:
    """On the engine thread: the message's attachments within the context left, a follow-up
    exchange kept free (`follow_up_room`)."""
    from app.documents.index import DocumentIndex

    doc, reserve = controller.doc, controller.max_tokens
    index = DocumentIndex() if doc.library else None
    try:
        if doc.endpoint is None and controller.host.ready:
            session, conversation = conversation_session(controller, reserve)
            keep = follow_up_room(reserve, session.n_ctx)
            left = partial(session.room, conversation=conversation)
            return _within(files, text, keep, left, session.count, index)
        keep = follow_up_room(reserve, ESTIMATED_CONTEXT)
        return _within(files, text, keep, partial(estimated_room, reserve=reserve), estimate, index)
    finally:
        if index is not None:
            index.close()


def _within(
    files: Sequence[Path],
    text: str,
    keep: int,
    left: Callable[[str], int],
    count: Callable[[str], int],
    index: DocumentIndex | None,
) -> Attached:
    """The attachments of `text` that leave `keep` tokens of the room (`left`: the room after
    a message, counted whole); counted again as sent, and fewer chosen when the parts' counts
    added up to less than the whole's."""
    from app.documents.attach import attach, with_attachments

    budget = left(text) - keep
    attached = attach(files, text, max(0, budget), count, index)
    for _ in range(MEASURES):
        over = keep - left(with_attachments(text, attached))
        if over <= 0 or budget <= 0:
            break
        budget -= over
        attached = attach(files, text, max(0, budget), count, index)
    return attached


async def send_with(
    controller: Sending,
    text: str,
    files: Sequence[Path],
    images: Sequence[Picture] = (),
) -> Attached:
    """Send `text` carrying `files` (and `images`; see the module guarantees)."""
    from app.documents.attach import with_attachments
    from app.documents.kept import keep_files

    attached = await controller.host.bridge.call(lambda: _attached(controller, files, text))
    controller.notice.emit("Attached: " + "; ".join(f.note() for f in attached.files))
    if controller.send(with_attachments(text, attached), images):
        doc, version = controller.doc.id, controller.doc.turns[-1].version.id
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, partial(keep_files, files, doc, version))
    return attached


def pasted_files(urls: Sequence[str], text: str) -> list[Path]:
    """The files a paste stands for: local files copied in a file manager, or text that is
    only the path of an existing document (absolute, or `file://`); [] for anything else."""
    from app.documents.extract import SUFFIXES

    if urls:
        return [Path(u) for u in urls]
    line = text.strip()
    if "\n" in line:
        return []
    path = Path(line.removeprefix("file://")).expanduser()
    ok = path.is_absolute() and path.suffix.lower() in SUFFIXES and path.is_file()
    return [path] if ok else []


def kept_of(version: str) -> list[tuple[str, Path]]:
    """(name, stored copy) of each file the message version carried that is kept here."""
    from app.documents.kept import KeptFiles

    kept = KeptFiles()
    try:
        return [(name, path) for name, path in kept.files_of(version) if path.is_file()]
    finally:
        kept.close()


def viewable(name: str, stored: Path) -> Path:
    """A copy of a kept file under its own name (so the desktop opens it with the right
    program), in the cache folder; the kept copy itself is never handed out to be edited."""
    folder = cache_dir() / "opened" / stored.name
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (Path(name).name or "attachment")
    if not target.is_file():
        shutil.copyfile(stored, target)
    return target


def document_suffixes() -> frozenset[str]:
    """The file names the documents reader takes (".md", ".pdf", ...), for the file dialog."""
    from app.documents.extract import SUFFIXES

    return frozenset(SUFFIXES)


def is_image_file(path: Path) -> bool:
    """Whether the composer takes `path` as an image (by its name: see `IMAGE_SUFFIXES`)."""
    return path.suffix.lower() in IMAGE_SUFFIXES


def check_image(source: Path | bytes, name: str = "") -> Picture:
    """An image file (or a pasted image's bytes) checked, for the composer; raises `ImageError`
    (an `InvalidInputError`) saying what is wrong. Call it off the GUI thread: it reads the
    file and decodes the whole picture once."""
    from app.images.decode import MAX_BYTES, ImageError, read

    if isinstance(source, Path):
        name = name or source.name
        try:
            size = source.stat().st_size
            if size > MAX_BYTES:
                raise ImageError(
                    f"{name} is {size >> 20} MiB; images up to {MAX_BYTES >> 20} MiB are taken"
                )
            source = source.read_bytes()
        except OSError as exc:
            raise ImageError(f"{name} could not be read: {exc.strerror or exc}", str(exc)) from exc
    return read(source, name)


def chip_image(source: Path | bytes, name: str, side: int) -> tuple[Picture, bytes] | str:
    """For the composer, off the GUI thread: the checked picture and a thumbnail of it (at
    most `side` pixels a side), or why it is not taken (one sentence)."""
    try:
        picture = check_image(source, name)
        return picture, thumbnail_png(picture, side)
    except InvalidInputError as exc:
        return exc.message


def remember_images(pictures: Sequence[Picture]) -> tuple[ImageContent, ...]:
    """The message contents of checked pictures, held in memory for this run (the turn finds
    them there before they are kept on disk)."""
    from app.images.kept import remember

    for picture in pictures:
        remember(picture)
    return tuple(p.content() for p in pictures)


def keep_images(
    images: Sequence[ImageContent], conversation: str, owner: str, whose: str = "The message's"
) -> str:
    """Keep the bytes of `images` with the conversation under `owner` (a message version's id,
    or a reply's for the images its tools returned), on the store's thread; "" when all were
    kept (or there were none), else a sentence saying which were not and why (`whose` images)."""
    from app.images.kept import keep

    if not images:
        return ""
    try:
        lost = keep(images, conversation, owner)
    except (OSError, sqlite3.Error) as exc:
        return f"{whose} images could not be kept with the conversation: {exc}"
    if lost:
        gone = ", ".join(lost)
        return f"{whose} images, not kept with the conversation (no longer here): {gone}"
    return ""


def keep_tool_images(messages: Sequence[Message], conversation: str, reply: str) -> str:
    """`keep_images` for the images a reply's tool messages carry, under the reply's id (so the
    user's message lists only the files the user attached), once the reply is saved: a
    reopened conversation's next turn finds them again."""
    images = [i for m in messages if m.author.role is Role.TOOL for i in m.images]
    return keep_images(images, conversation, reply, "A tool's")


def keeping(version: Version, reply: Reply | None, doc: str) -> Callable[[], str] | None:
    """The work that keeps `version`'s images (with `reply`: the images its tools returned)
    with conversation `doc`, for the store's thread; None when there is nothing to keep."""
    if reply is not None:
        return partial(keep_tool_images, reply.messages, doc, reply.id)
    return partial(keep_images, version.images, doc, version.id) if version.images else None


def thumbnail_of(sha256: str, name: str, side: int) -> bytes | None:
    """A PNG thumbnail (at most `side` pixels a side) of a message's image; None when it is
    no longer kept here. Call it off the GUI thread."""
    from app.images.decode import thumbnail
    from app.images.kept import find

    picture = find(sha256, name)
    if picture is None:
        return None
    try:
        return thumbnail(picture, side)
    except (OSError, ValueError):
        return None


def thumbnail_png(picture: Picture, side: int) -> bytes:
    """A PNG thumbnail of a checked picture (off the GUI thread)."""
    from app.images.decode import thumbnail

    return thumbnail(picture, side)


def image_bytes(sha256: str, name: str = "") -> bytes | None:
    """The bytes of a message's image, to show it large; None when no longer kept here."""
    from app.images.kept import find

    picture = find(sha256, name)
    return picture.data if picture is not None else None


def library() -> list[Path]:
    """The documents in the library (`harmony-desk documents add`), for the composer's `@`;
    call off the GUI thread (it reads the index)."""
    from app.documents.index import DocumentIndex

    index = DocumentIndex()
    try:
        index.refresh()  # files added to a library folder, changed or removed since
        return [Path(str(d["path"])) for d in index.documents() if d["chunks"]]
    finally:
        index.close()


__all__ = [
    "FOLLOW_UP",
    "IMAGE_SUFFIXES",
    "check_image",
    "chip_image",
    "document_suffixes",
    "follow_up_room",
    "image_bytes",
    "is_image_file",
    "keep_images",
    "keep_tool_images",
    "keeping",
    "kept_of",
    "library",
    "pasted_files",
    "remember_images",
    "send_with",
    "thumbnail_of",
    "thumbnail_png",
    "viewable",
]
