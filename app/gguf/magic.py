"""What a file that is not a GGUF model looks like, from its first bytes, in words.

Guarantees: `not_gguf` turns a file's head into a `ModelLoadError` whose sentence names the
kind of file in words ("it looks like a ZIP archive", "it is empty") and never shows a byte
string; the bytes themselves (in hex and printable characters) go only to the error's
`details`. A head that starts with `GGUF` but ends before the header does is TRUNCATED, never
NOT_GGUF. The recognised kinds: archives (ZIP, gzip, 7-Zip, RAR, xz, bzip2, zstd), PDF,
images, programs, web pages, Git LFS pointers, safetensors, PyTorch pickles, llama.cpp's old
GGML formats, JSON and plain text; anything else is "not a GGUF model file" with no guess.
"""

from __future__ import annotations

import struct

from app.errors import LoadProblem, ModelLoadError
from app.gguf.cursor import ENDS_EARLY

MAGIC = b"GGUF"
HEAD = 64  # bytes read to tell what a file is
_UNPACK = "; if the model is inside, unpack it first"
_CONVERT = "; convert it to GGUF first (llama.cpp's convert scripts)"
_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive" + _UNPACK),
    (b"PK\x05\x06", "an empty ZIP archive"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "a gzip-compressed file" + _UNPACK),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive" + _UNPACK),
    (b"Rar!", "a RAR archive" + _UNPACK),
    (b"\xfd7zXZ\x00", "an xz-compressed file" + _UNPACK),
    (b"BZh", "a bzip2-compressed file" + _UNPACK),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file" + _UNPACK),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x7fELF", "a program"),
    (b"MZ", "a Windows program"),
    (b"lmgg", "a model in llama.cpp's old GGML format" + _CONVERT),
    (b"fmgg", "a model in llama.cpp's old GGMF format" + _CONVERT),
    (b"tjgg", "a model in llama.cpp's old GGJT format" + _CONVERT),
    (b"version https://git-lfs", "a Git LFS pointer; the model itself was never downloaded"),
)
_WEB_PAGE = (b"<!doctype html", b"<html", b"<head", b"<?xml")


def looks_like(head: bytes, size: int) -> str:
    """What a file that starts with `head` (and is `size` bytes) looks like, as a noun phrase
    and maybe a hint after a semicolon ("a PDF document"); "" when it looks like nothing the
    app knows."""
    for prefix, kind in _PREFIXES:
        if head.startswith(prefix):
            return kind
    if len(head) >= 9 and head[8:9] == b"{":  # safetensors: u64 header length, then JSON
        (length,) = struct.unpack_from("<Q", head)
        if 2 <= length <= size - 8:
            return "a safetensors file" + _CONVERT
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a PyTorch checkpoint" + _CONVERT
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.lower().startswith(_WEB_PAGE):
        return "a web page; perhaps a download or sign-in page was saved in place of the model"
    if text[:1] in (b"{", b"["):
        return "a JSON file"
    if _is_text(head):
        return "a text file"
    return ""


def _is_text(head: bytes) -> bool:
    try:
        decoded = head.decode("utf-8")
    except UnicodeDecodeError:  # a multi-byte character cut at the end of the head is fine
        try:
            decoded = head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return False
    return bool(decoded) and all(c.isprintable() or c in "\t\r\n" for c in decoded)


def shown(head: bytes) -> str:
    """The first bytes for the details: hex, and their printable characters."""
    first = head[:16]
    chars = "".join(chr(b) if 32 <= b < 127 else "." for b in first)
    return f"{first.hex(' ').upper()} (“{chars}”)"


def not_gguf(path: object, head: bytes, size: int) -> ModelLoadError:
    """The error for a file whose head is not a GGUF header (see the module guarantees)."""
    if size == 0:
        return ModelLoadError(LoadProblem.NOT_GGUF, path, "the file is empty (0 bytes)")
    facts = (
        f"It is {size:,} bytes long and starts with {shown(head)};"
        f" a GGUF model file starts with {shown(MAGIC)}."
    )
    if head.startswith(MAGIC):
        return ModelLoadError(LoadProblem.TRUNCATED, path, ENDS_EARLY, facts)
    kind = looks_like(head, size)
    if MAGIC.startswith(head):  # "GG": fewer bytes than the magic itself
        reason = f"it is too short to be a GGUF model file ({size} bytes)"
    elif not head.strip(b"\0"):
        reason = "it is not a GGUF model file (it starts with zeros; it may be damaged)"
    elif kind:
        reason = f"it is not a GGUF model file (it looks like {kind})"
    else:
        reason = "it is not a GGUF model file"
    return ModelLoadError(LoadProblem.NOT_GGUF, path, reason, facts)


__all__ = ["HEAD", "MAGIC", "looks_like", "not_gguf", "shown"]
