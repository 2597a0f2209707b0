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
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable
from itertools import accumulate
from typing import Any

from app.domain.messages import IMAGE_MARKER
from app.server.errors import ApiError

MAX_DEPTH = 64  # arrays and objects inside one another in a body
MAX_SCHEMA_DEPTH = 32  # the same inside one JSON schema (a response format, a tool's parameters)

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{]}")
_UNSAID = re.compile(f"[\ud800-\udfff{IMAGE_MARKER}]")  # a lone surrogate, or the image marker
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def depth_of_raw(raw: bytes) -> int:
    """How deep arrays and objects nest in the JSON text `raw` (brackets in strings do not
    count), without parsing it."""
    brackets = _STRING.sub(b"", raw).translate(_BRACKETS, _NOT_BRACKETS)
    if brackets.count(1) <= MAX_DEPTH:  # cheap: cannot nest deeper than it opens
        return brackets.count(1)
    return max(accumulate(1 if b == 1 else -1 for b in brackets))


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


def _unsaid_at(value: Any) -> tuple[str, str] | None:
    """The path (`messages.0.content`) of the first string with a lone surrogate or the image
    marker, and which, if any."""
    todo: list[tuple[Any, str]] = [(value, "")]
    while todo:
        item, path = todo.pop()
        found = _UNSAID.search(item) if isinstance(item, str) else None
        if found is not None:
            return path or "body", found.group()
        if isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{key}" if path else str(key)
                found = _UNSAID.search(key)
                if found is not None:
                    return path or "body", found.group()
                todo.append((child, where))
        elif isinstance(item, list):
            todo.extend((child, f"{path}.{i}" if path else str(i)) for i, child in enumerate(item))
    return None


def parsed(raw: bytes) -> Any:
    """The JSON value of a body (see the module guarantees)."""
    if depth_of_raw(raw) > MAX_DEPTH:
        raise ApiError(
            400, f"the body nests deeper than {MAX_DEPTH} levels", code="nested_too_deep"
        )
    try:  # read as UTF-8, the encoding the depth was measured in (never UTF-16 or -32)
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError too
        raise ApiError(400, f"the body is not JSON: {exc}", code="invalid_json") from None
    unsaid = _unsaid_at(value)
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
    "MAX_DEPTH",
    "MAX_SCHEMA_DEPTH",
    "check_schema",
    "depth_of",
    "depth_of_raw",
    "parsed",
    "printable",
    "read_within",
]
