"""MCP servers' resources and prompts for the window's composer — what `@` and `/` offer, a
resource read into an attachment, a prompt run into the next message — and the conversations'
tools kept as their servers list them.

Guarantees: a conversation's servers are those its Tools enable (`mcp:NAME`, `servers`); every
other function blocks (a server may have to start) and is called off the GUI thread. Listing
waits at most `LIST_S` a server, reading a resource or running a prompt at most `READ_S`
(E-TOOL-TIMEOUT past it); a server that cannot list (it cannot start, it is remote and the
conversation offline) is a section that says why, the other servers listed all the same.
A read resource brings at most `MAX_TEXT` of text (1 MiB: more is refused, never cut): its
text becomes a file in the cache folder (named after the server and the resource, with a
suffix the documents reader takes), attached like any document and said with its size; a
binary part that `app.images` reads goes with the message's images, any other is refused
with a sentence. A prompt's messages become the message's text: a user message's text as it
is, another role's quoted under its role, in order; the images they hold go with the images.
Every text a server sends is redacted of the app's known secrets (`app/tools/mcp/results.py`).
`follow_tool_changes` keeps each conversation's registry as its servers list their tools:
after a server says its tools changed, the next turn declares the new list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.errors import HarmonyDeskError, InvalidInputError
from app.fileio import private_folder, write_atomic
from app.paths import cache_dir
from app.tools.mcp.results import Parts, prompt_parts, resource_parts, size_text
from app.tools.mcp.tools import MCP_PREFIX, McpPool

if TYPE_CHECKING:
    from app.domain.history import ChatDoc
    from app.tools.session import ConversationTools

LIST_S = 10.0  # listing one server's resources or prompts
READ_S = 30.0  # reading a resource, running a prompt
MAX_TEXT = 1 << 20  # bytes of text a resource may bring
MAX_BLOB = 50 << 20  # bytes in all a read may bring (images: `app.images` takes up to this)
# a resource's MIME type → the suffix its file gets (the documents reader goes by the suffix)
SUFFIX = {
    "text/markdown": ".md",
    "text/html": ".html",
    "application/json": ".json",
    "text/csv": ".csv",
    "application/xml": ".xml",
    "text/xml": ".xml",
    "application/yaml": ".yaml",
    "text/x-python": ".py",
}
IMAGE_SUFFIX = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "image/gif": ".gif",
    "image/bmp": ".bmp",
}

Image = tuple[bytes, str]  # an image's bytes and a name for it


@dataclass(frozen=True)
class Argument:
    """One argument a prompt takes."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class Offer:
    """A resource (`key`: its URI) or a prompt (`key`: its name) a server offers."""

    server: str
    kind: Literal["resource", "prompt"]
    key: str
    name: str
    description: str = ""
    mime_type: str = ""
    arguments: tuple[Argument, ...] = ()


@dataclass(frozen=True)
class Section:
    """What one server offers, or why it could not say (`problem`)."""

    server: str
    offers: tuple[Offer, ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class Attachment:
    """A read resource, for the composer: its text as a file to attach (None: none) and its
    size, the images it held, and a sentence for what was refused ("" when nothing)."""

    file: Path | None = None
    size: int = 0
    images: tuple[Image, ...] = ()
    refused: str = ""

    @property
    def size_said(self) -> str:
        """The text's size in words ("12.3 KiB"), for its chip."""
        return size_text(self.size)


@dataclass(frozen=True)
class Filled:
    """A prompt run: the message's text, its images, and what was refused."""

    text: str
    images: tuple[Image, ...] = ()
    refused: str = ""


def servers(doc: ChatDoc) -> tuple[str, ...]:
    """The MCP servers the conversation's Tools enable, in order."""
    return tuple(n.removeprefix(MCP_PREFIX) for n in doc.tools if n.startswith(MCP_PREFIX))


class McpContext:
    """See the module guarantees."""

    def __init__(self, pool: McpPool) -> None:
        self.pool = pool

    def resources(self, names: Sequence[str], offline: bool) -> list[Section]:
        """Each server's resources (name, description, MIME type)."""
        return [self._section(n, offline, "resource") for n in names]

    def prompts(self, names: Sequence[str], offline: bool) -> list[Section]:
        """Each server's prompts (name, description, arguments)."""
        return [self._section(n, offline, "prompt") for n in names]

    def _section(self, name: str, offline: bool, kind: Literal["resource", "prompt"]) -> Section:
        try:
            self.pool.server(name, offline)
            connection = self.pool.connection(name)
            if kind == "resource":
                listed = connection.resources(LIST_S)
                offers = tuple(
                    Offer(
                        name,
                        "resource",
                        str(r.uri),
                        str(r.name),
                        (r.description or "").strip(),
                        r.mime_type or "",
                    )
                    for r in listed
                )
            else:
                offers = tuple(_prompt(name, p) for p in connection.prompts(LIST_S))
        except HarmonyDeskError as exc:  # it cannot start, answer, or be read from mcp.json
            self.pool.note(name, f"its {kind}s could not be listed: {exc.message}")
            return Section(name, problem=exc.message)
        return Section(name, offers)

    def read(self, offer: Offer) -> Attachment:
        """The resource, read and made ready to attach (see the module guarantees)."""
        result = self.pool.connection(offer.server).read_resource(offer.key, READ_S)
        parts = resource_parts(result, MAX_BLOB)
        refused = list(parts.refused)
        images, others = _images(parts, offer.name)
        refused += [f"its {mime or 'binary'} content ({why})" for mime, why in others]
        text = "\n\n".join(parts.texts)
        size = len(text.encode())
        file = None
        if size > MAX_TEXT:
            refused.append(
                f"its text of {size_text(size)} (resources of up to"
                f" {size_text(MAX_TEXT)} of text are attached)"
            )
        elif parts.texts:
            file = _file(offer, text)
        said = f"Not attached from “{offer.name}” ({offer.server}): {'; '.join(refused)}."
        return Attachment(file, size if file else 0, tuple(images), said if refused else "")

    def prompt(self, offer: Offer, arguments: dict[str, str]) -> Filled:
        """The prompt run with `arguments`, as the next message (see the module guarantees)."""
        result = self.pool.connection(offer.server).get_prompt(offer.key, arguments, READ_S)
        messages = prompt_parts(result)
        texts: list[str] = []
        images: list[Image] = []
        refused: list[str] = []
        for role, parts in messages:
            found, others = _images(parts, offer.name)
            images += found
            refused += [*parts.refused, *(f"{m or 'binary'} content ({w})" for m, w in others)]
            text = "\n\n".join(parts.texts)
            if text and role != "user":
                text = f"{role.capitalize()}:\n" + "\n".join(f"> {ln}" for ln in text.split("\n"))
            if text:
                texts.append(text)
        said = f"Left out of the prompt “{offer.name}”: {'; '.join(refused)}." if refused else ""
        return Filled("\n\n".join(texts), tuple(images), said)


def _prompt(server: str, listed: object) -> Offer:
    arguments = tuple(
        Argument(str(a.name), (a.description or "").strip(), bool(a.required))
        for a in getattr(listed, "arguments", None) or ()
    )
    name = str(getattr(listed, "name", ""))
    description = (getattr(listed, "description", None) or "").strip()
    return Offer(server, "prompt", name, name, description, arguments=arguments)


def _images(parts: Parts, name: str) -> tuple[list[Image], list[tuple[str, str]]]:
    """The binary parts `app.images` reads, named; the others with why they are not taken."""
    from app.controllers.attachments import check_image

    images: list[Image] = []
    others: list[tuple[str, str]] = []
    for number, (mime, data) in enumerate(parts.blobs, 1):
        stem = _safe(name) or "resource"
        called = (
            f"{stem}-{number}{IMAGE_SUFFIX.get(mime, '')}"
            if len(parts.blobs) > 1
            else (stem + IMAGE_SUFFIX.get(mime, ""))
        )
        try:
            check_image(data, called)
        except InvalidInputError as exc:
            others.append(
                (
                    mime,
                    "only text and images are attached"
                    if not mime.startswith("image/")
                    else exc.message.rstrip("."),
                )
            )
            continue
        images.append((data, called))
    return images, others


def _safe(name: str) -> str:
    """A name a file may have on any system (letters, digits, `._-` and spaces; 80 at most)."""
    return re.sub(r"[^\w.\- ]+", "_", name).strip(" ._")[:80]


def _file(offer: Offer, text: str) -> Path:
    """The resource's text as a private file to attach: `SERVER — NAME.suffix`."""
    from app.documents.extract import SUFFIXES

    folder = private_folder(cache_dir() / "mcp" / _safe(offer.server))
    stem = _safe(offer.name) or "resource"
    suffix = Path(stem).suffix.lower()
    if suffix not in SUFFIXES or not suffix:
        stem += SUFFIX.get(offer.mime_type.split(";")[0].strip(), ".txt")
    path = folder / f"{_safe(offer.server)} — {stem}"
    write_atomic(path, text)
    return path


def follow_tool_changes(
    pool: McpPool, conversations: Callable[[], Iterable[ConversationTools]]
) -> None:
    """After a server says its tools changed, each conversation that uses it declares them
    as the server lists them now, from its next turn (`McpPool.renewed`)."""

    def heard(name: str, what: str) -> None:
        if what != "tools":
            return
        for tools in list(conversations()):
            if MCP_PREFIX + name in tools.options.enabled:
                tools.registry = pool.renewed(tools.registry, name, tools.options.offline)

    pool.listen(heard)


def safely(work: Callable[[], Any]) -> Callable[[], Any]:
    """`work`, whose expected failure comes back as its sentence (for the window to say)."""

    def run() -> Any:
        try:
            return work()
        except HarmonyDeskError as exc:
            return exc.message

    return run


__all__ = [
    "LIST_S",
    "MAX_TEXT",
    "READ_S",
    "Argument",
    "Attachment",
    "Filled",
    "McpContext",
    "Offer",
    "Section",
    "follow_tool_changes",
    "safely",
    "servers",
]
