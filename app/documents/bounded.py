"""Limits that keep a hostile document small: checked before the expensive work, not after.

Guarantees:
- `pdf_limits()` is the pypdf configuration every PDF is read under: no stream decompresses
  past `STREAM_BYTES` (pypdf stops decompressing there, so memory stays near that size), no
  content stream is parsed past `PARSE_WORK` tokens, no page draws more than `FORMS` forms;
- `operators(data, limit)` counts the operators of a content stream (strings, names and hex
  strings are skipped, so the words of a page do not count) and stops counting past `limit`:
  a page is measured in one regular-expression pass before pypdf parses it;
- `zip_refusal(path)` reads a ZIP file's directory and then streams every entry through a
  small buffer, counting what it really expands to; it names the first limit broken (too many
  entries, an entry or the whole declared or found larger than `ENTRY_BYTES` / `ZIP_BYTES`, a
  damaged archive) or is None — nothing is ever decompressed past the limits, and no entry is
  held in memory whole.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STREAM_BYTES = 16 * 1024 * 1024  # one PDF stream, decompressed
PARSE_WORK = 1_000_000  # tokens pypdf may parse in one content stream
FORMS = 500  # form XObjects drawn by one page
PAGE_OPERATORS = 100_000  # operators one page may have; a page with more is not read
PDF_OPERATORS = 2_000_000  # operators a whole PDF may have; the pages after are not read
ZIP_ENTRIES = 5_000
ENTRY_BYTES = 64 * 1024 * 1024  # one part of a Word file, expanded
ZIP_BYTES = 256 * 1024 * 1024  # all of its parts, expanded
_READ = 1 << 20

# one token of a content stream: a string (kept whole, one level of nested parentheses), a hex
# string or dictionary bracket, a name, or a bare word (an operator, or true/false/null)
_TOKEN = re.compile(
    rb"\((?:[^()\\]|\\.|\((?:[^()\\]|\\.)*\))*\)|<<|>>|<[^<>]*>|/[^\s/\[\]()<>{}%]*"
    rb"|(?P<word>[A-Za-z'\"][A-Za-z0-9*'\"]*)",
    re.DOTALL,
)
_NOT_OPERATORS = frozenset({b"true", b"false", b"null"})


@contextmanager
def pdf_limits() -> Iterator[None]:
    """pypdf's limits for the block (see the module guarantees)."""
    from pypdf import apply_configuration

    with apply_configuration(
        zlib_maximum_output_length=STREAM_BYTES,
        lzw_maximum_output_length=STREAM_BYTES,
        run_length_maximum_output_length=STREAM_BYTES,
        brotli_maximum_output_length=STREAM_BYTES,
        jbig2_maximum_output_length=STREAM_BYTES,
        array_based_stream_maximum_output_length=STREAM_BYTES,
        image_maximum_buffer_size=STREAM_BYTES,
        stream_decoding_work_maximum_length=4 * STREAM_BYTES,
        stream_parsing_work_maximum_count=PARSE_WORK,
        xform_maximum_invocations_per_extraction=FORMS,
    ):
        yield


def operators(data: bytes, limit: int) -> int:
    """The operators in the content stream `data`, counted up to `limit` + 1."""
    count = 0
    for token in _TOKEN.finditer(data):
        word = token.group("word")
        if word is not None and word not in _NOT_OPERATORS:
            count += 1
            if count > limit:
                break
    return count


def _streamed(archive: zipfile.ZipFile, info: zipfile.ZipInfo, room: int) -> int:
    """What the entry really expands to, read in small pieces, stopping past `room`."""
    found = 0
    with archive.open(info) as entry:
        while piece := entry.read(_READ):
            found += len(piece)
            if found > room:
                break
    return found


def zip_refusal(path: Path) -> str | None:
    """Why the ZIP file at `path` is not read (see the module guarantees), or None."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
            if len(entries) > ZIP_ENTRIES:
                return f"it holds over {ZIP_ENTRIES:,} parts"
            declared = sum(info.file_size for info in entries)
            if declared > ZIP_BYTES or any(i.file_size > ENTRY_BYTES for i in entries):
                return f"it would expand to {declared:,} bytes (a ZIP bomb?)"
            total = 0
            for info in entries:
                room = min(ENTRY_BYTES, ZIP_BYTES - total, info.file_size)
                found = _streamed(archive, info, room)
                if found > room:
                    return f"{info.filename} expands past its declared size (a ZIP bomb?)"
                total += found
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError) as exc:
        return f"it is not a readable ZIP archive ({exc})"
    except (OSError, RuntimeError, ValueError, NotImplementedError) as exc:  # encrypted, unknown
        return f"it could not be read ({exc})"
    return None


__all__ = [
    "PAGE_OPERATORS",
    "PDF_OPERATORS",
    "STREAM_BYTES",
    "operators",
    "pdf_limits",
    "zip_refusal",
]
