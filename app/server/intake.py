"""What a request body must be before the server reads it: the checks at the HTTP boundary.

Guarantees: a body is read within a deadline (408 past it, never a connection held open by a
slow sender); its nesting depth is measured on the raw bytes, before any parser sees them, so
a body nested deeper than `MAX_DEPTH` is a 400 and no parser can recurse out of its stack;
it must be strict JSON in UTF-8 (no `NaN` or `Infinity`) or it is a 400 `invalid_json`; a string
anywhere in it (a key too) with a lone surrogate, or with U+E0F0 (`IMAGE_MARKER`, which marks an
image's place in a message's text: images come as image parts), is a 400 naming the field, so
such text never reaches the model or its worker; a JSON schema nested deeper than
`MAX_SCHEMA_DEPTH` is a 400 naming it. `printable` is how request text is written to the log:
control characters escaped, so a client cannot forge or colour a log line.

Nothing heavy runs on the server's event loop: a body over `INLINE_MAX` bytes is checked and
parsed on a worker thread (`json_of`); the scan that measures its depth goes a chunk at a time,
and the parsed value is walked (iteratively, in linear time, to name the field) only when its
raw text has a refused character (`unsaid_in_raw`). So the longest a large body keeps the
interpreter from the loop is the JSON parser's one call, short: a body holds at most
`MAX_CONTAINERS` arrays and objects (a 400 saying how many it has), which also bounds what the
request's validation walks.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Iterator
from itertools import accumulate
from typing import Any

from app.domain.messages import IMAGE_MARKER
from app.server.errors import ApiError

MAX_DEPTH = 64  # arrays and objects inside one another in a body
MAX_SCHEMA_DEPTH = 32  # the same inside one JSON schema (a response format, a tool's parameters)
MAX_CONTAINERS = 100_000  # arrays and objects in one body (a long agent request has thousands)
INLINE_MAX = 64 * 1024  # bytes of a body checked on the event loop: past it, on a thread

_CHUNK = 1 << 18  # bytes of a body one scan of it takes at a time
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{]}")
_UNSAID = re.compile(f"[\ud800-\udfff{IMAGE_MARKER}]")  # a lone surrogate, or the image marker
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_ESCAPED_PAIR = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_UNSAID_RAW = re.compile(
    rb"\\u(?:[dD][89a-fA-F]|[eE]0[fF]0)|" + re.escape(IMAGE_MARKER.encode("utf-8"))
)


def _outside_strings(raw: bytes) -> Iterator[bytes]:
    """The JSON text `raw` but for its strings, a chunk at a time (no one call holds the
    interpreter long). Escapes go first, left to right as a parser reads them (`\\\\`, then
    `\\"`), so the quotes left alternate: open, close. Where `raw` is not JSON, what comes
    before its first fault (all a parser reads) is still read right."""
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    inside = False
    for start in range(0, len(text), _CHUNK):
        parts = text[start : start + _CHUNK].split(b'"')
        yield b"".join(parts[inside::2])
        inside ^= len(parts) % 2 == 0  # an odd number of quotes in the chunk


def shape_of_raw(raw: bytes) -> tuple[int, int]:
    """How deep arrays and objects nest in the JSON text `raw`, and how many there are
    (brackets in strings do not count), without parsing it."""
    brackets = b"".join(p.translate(_BRACKETS, _NOT_BRACKETS) for p in _outside_strings(raw))
    opened = brackets.count(1)
    if opened <= MAX_DEPTH:  # cheap: cannot nest deeper than it opens
        return opened, opened
    return max(accumulate(1 if b == 1 else -1 for b in brackets)), opened


def depth_of_raw(raw: bytes) -> int:
    """How deep arrays and objects nest in the JSON text `raw` (see `shape_of_raw`)."""
    return shape_of_raw(raw)[0]


def depth_of(value: Any) -> int:
    """How deep lists and dicts nest in a parsed value (a scalar is 0)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            todo.extend((child, level + 1) for child in children)
    return deepest


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def unsaid_in_raw(raw: bytes) -> bool:
    """Whether a string in the JSON text `raw` holds a lone surrogate or the image marker: exact
    for UTF-8 JSON, without parsing it. A surrogate can be written there only as a `\\u`
    escape, the marker as itself or as one. Escaped backslashes are read first, left to right
    as a parser reads them, and set apart (so each backslash left starts an escape, and no two
    escapes they parted meet); then the escaped pairs that make one character go; any
    surrogate escape left is a lone one."""
    escapes = raw.replace(b"\\\\", b"__")
    return _UNSAID_RAW.search(_ESCAPED_PAIR.sub(b"", escapes)) is not None


def _entries(item: dict[Any, Any] | list[Any]) -> Iterator[tuple[Any, Any]]:
    return iter(item.items()) if isinstance(item, dict) else enumerate(item)


def _unsaid_in(item: Any) -> str | None:
    """The refused character in `item` (in a dict's keys too), if any."""
    if isinstance(item, str):
        found = _UNSAID.search(item)
    elif isinstance(item, dict):
        found = next(filter(None, map(_UNSAID.search, item)), None)
    else:
        return None
    return None if found is None else found.group()


def _unsaid_at(value: Any) -> tuple[str, str] | None:
    """The path (`messages.0.content`) of the first string, in document order, with a lone
    surrogate or the image marker, and which, if any (a key's: the path of its object).
    Iterative (an iterator per open array or object) and linear in the value's size."""
    found = _unsaid_in(value)
    if found is not None:
        return "body", found
    path: list[str] = []  # the keys of the open levels but the outermost
    levels = [_entries(value)] if isinstance(value, dict | list) else []
    while levels:
        entry = next(levels[-1], None)
        if entry is None:
            levels.pop()
            if path:
                path.pop()
            continue
        key, child = entry
        found = _unsaid_in(child)
        if found is not None:
            return ".".join([*path, str(key)]), found
        if isinstance(child, dict | list):
            path.append(str(key))
            levels.append(_entries(child))
    return None


def parsed(raw: bytes) -> Any:
    """The JSON value of a body (see the module guarantees)."""
    depth, containers = shape_of_raw(raw)
    if depth > MAX_DEPTH:
        raise ApiError(
            400, f"the body nests deeper than {MAX_DEPTH} levels", code="nested_too_deep"
        )
    if containers > MAX_CONTAINERS:
        said = f"the body has {containers:,} arrays and objects; the most allowed is"
        said += f" {MAX_CONTAINERS:,}"
        raise ApiError(400, said, code="too_many_values")
    try:  # read as UTF-8, the encoding the depth was measured in (never UTF-16 or -32)
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError too
        raise ApiError(400, f"the body is not JSON: {exc}", code="invalid_json") from None
    unsaid = _unsaid_at(value) if unsaid_in_raw(raw) else None
    if unsaid is not None:
        where, what = unsaid
        said = (
            "the character U+E0F0, which marks an image's place here (send images as image parts)"
            if what == IMAGE_MARKER
            else "a lone surrogate (not a Unicode character)"
        )
        raise ApiError(400, f"{where}: the text has {said}", param=where, code="invalid_text")
    return value


async def read_within(body: Awaitable[bytes], seconds: float) -> bytes:
    """The body, or a 408 once `seconds` have passed before all of it came."""
    try:
        return await asyncio.wait_for(body, seconds)
    except TimeoutError:
        raise ApiError(
            408, f"the body did not arrive within {seconds:g} s", code="request_timeout"
        ) from None


async def json_of(body: Awaitable[bytes], seconds: float) -> Any:
    """The body read within `seconds` (`read_within`) and `parsed`: on a worker thread when
    it is over `INLINE_MAX` bytes, so the event loop serves other clients meanwhile."""
    raw = await read_within(body, seconds)
    if len(raw) <= INLINE_MAX:
        return parsed(raw)
    return await asyncio.to_thread(parsed, raw)


def check_schema(schema: Any, param: str) -> None:
    """A 400 naming `param` if the schema nests deeper than `MAX_SCHEMA_DEPTH`."""
    if depth_of(schema) > MAX_SCHEMA_DEPTH:
        raise ApiError(
            400,
            f"{param}: the schema nests deeper than {MAX_SCHEMA_DEPTH} levels",
            param=param,
            code="nested_too_deep",
        )


def printable(text: str) -> str:
    """`text` for a log line: control characters (newlines, ESC) as `\\xNN` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


__all__ = [
    "INLINE_MAX",
    "MAX_DEPTH",
    "MAX_SCHEMA_DEPTH",
    "check_schema",
    "depth_of",
    "depth_of_raw",
    "json_of",
    "parsed",
    "printable",
    "read_within",
    "unsaid_in_raw",
]
