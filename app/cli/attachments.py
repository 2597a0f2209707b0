"""`chat --attach FILE` and `chat --image FILE`: the files and images a message carries, and
the sources its answer cited.

Guarantees: before the message is sent, stderr says what each file became ("whole file, N
tokens", "K passages of M", or why it could not be read); the budget is the context left after
the conversation so far and the answer's reserve, counted with the model's own tokenizer (an
estimate of four characters a token for a remote endpoint); after the answer, each passage it
cited is named on stderr with its file and page or lines. With `--library`, every message
also carries the library's most relevant passages (the library refreshed first); the files a
saved conversation's message carried are kept with it, as the window keeps them.

An image (`--image`, `/image`) is read and checked (`app.images.decode.read`) before anything
else sees it: a bad `--image` ends the command with one sentence (exit status 2) before the
model loads, a bad `/image` is said on stderr and the conversation goes on; `/image` to a local
model loaded without its projector is refused at once (a turn with `--image` fails with the
engine's sentence); a good image is remembered for this run (`app.images.kept.remember`: the
engine finds its bytes by sha256) and, in a saved conversation, kept with its message's version
so the history and its exports hold its bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.cli.checkpoints import ChatCheckpoints
from app.documents.attach import Attached, attach, with_attachments
from app.documents.index import DocumentIndex
from app.documents.kept import KeptFiles
from app.domain.citations import cited
from app.engine.session import Session
from app.errors import InvalidInputError
from app.images.decode import Picture, read
from app.images.kept import remember


def prepare(
    session: Session,
    files: Sequence[Path],
    text: str,
    err: TextIO,
    library: bool = False,
) -> tuple[str, Attached]:
    """The message to send with its attachments, said on `err` first."""
    index = DocumentIndex() if library else None
    try:
        # a remote endpoint's tokenizer is not ours: its session estimates
        attached = attach(files, text, session.room(text), session.count, index)
    finally:
        if index is not None:
            index.close()
    for file in attached.files:
        err.write(f"[attached] {file.note()}\n")
    return with_attachments(text, attached), attached


def sources(answer: str, attached: Attached, err: TextIO) -> None:
    """Name the passages the answer cited."""
    passages = attached.passages
    for n in cited(answer, len(passages)):
        p = passages[n - 1]
        err.write(f"[{n}] {p.file}, {p.where}\n")


def picture(path: Path) -> Picture:
    """The image at `path`, checked and remembered (see the module docstring)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read the image {path}: {exc.strerror or exc}") from exc
    checked = read(data, path.name)
    remember(checked)
    return checked


def described(p: Picture) -> str:
    """One line saying what an attached image is."""
    return f"{p.name or 'image'}, {p.width}×{p.height} {p.mime.removeprefix('image/').upper()}"


def checked(names: Sequence[str], err: TextIO) -> list[Picture]:
    """The `--image` files, each checked and said on `err` (before the model loads)."""
    pictures = [picture(Path(name).expanduser()) for name in names]
    for p in pictures:
        err.write(f"[image] {described(p)}\n")
    return pictures


def add_image(session: Session, name: str, pending: list[Picture], err: TextIO) -> None:
    """`/image FILE`: the image checked and kept in `pending` for the next message, or why
    not, said on `err`."""
    if not name:
        err.write("[usage] /image FILE adds an image to your next message\n")
        return
    problem = reads_text_only(session)
    if not problem:
        try:
            pending.append(picture(Path(name).expanduser()))
        except InvalidInputError as exc:
            problem = exc.message
    if problem:
        err.write(f"[image not attached] {problem}\n")
        return
    err.write(f"[image] {described(pending[-1])}: it goes with your next message\n")


def reads_text_only(session: Session) -> str:
    """Why the session's model cannot be sent images ("" when it can, or may: a remote
    endpoint's server says for itself)."""
    if session.capabilities.images:
        return ""
    return (
        f"{session.name} reads text only: load it with its projector (--projector FILE, or an"
        " mmproj GGUF in its folder) to send images"
    )


def save_images(saved: ChatCheckpoints, pictures: Sequence[Picture]) -> None:
    """The images of the message just begun (`ChatCheckpoints.begin` saved it with them): their
    bytes kept with its version, so exports carry them."""
    version = saved.doc.turns[-1].version
    kept = KeptFiles()
    try:
        for p in pictures:
            kept.keep_bytes(p.data, p.name or "image", saved.doc.id, version.id)
    finally:
        kept.close()


__all__ = [
    "add_image",
    "checked",
    "described",
    "picture",
    "prepare",
    "reads_text_only",
    "save_images",
    "sources",
]
