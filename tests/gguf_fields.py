"""A GGUF file's metadata, read at once for building test models (`tests/tiny_*.py`).

`gguf.GGUFReader` parses every element of an array through a memory-map view: Gemma 4's
vocabulary (262,144 tokens, scores and types) takes it a minute. This reads the same keys with one
`struct` unpack per string and one numpy copy per numeric array.

Guarantees: each key's value is what `GGUFReader`'s `contents()` gives (a Python scalar, a `str`,
or a list of them, in file order) with its GGUF value types (the value's, then an array's
items'); only the header is read, never the tensors; a file that is not GGUF (version 2 or 3)
is a ValueError.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

STRING, ARRAY = 8, 9  # gguf.GGUFValueType
_NUMBERS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?",
            10: "<u8", 11: "<i8", 12: "<f8"}  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One key's value and its GGUF value types (`(ARRAY, item type)` for an array)."""

    value: Any
    types: tuple[int, ...]


def _string(view: Any, at: int) -> tuple[str, int]:
    (size,) = struct.unpack_from("<Q", view, at)
    return bytes(view[at + 8 : at + 8 + size]).decode("utf-8"), at + 8 + size


def _numbers(view: Any, at: int, kind: int, count: int) -> tuple[list[Any], int]:
    dtype = np.dtype(_NUMBERS[kind])
    end = at + count * dtype.itemsize
    return np.frombuffer(bytes(view[at:end]), dtype=dtype).tolist(), end


def _value(view: Any, at: int, kind: int) -> tuple[Any, tuple[int, ...], int]:
    if kind == STRING:
        text, at = _string(view, at)
        return text, (STRING,), at
    if kind != ARRAY:
        (one,), at = _numbers(view, at, kind, 1)
        return one, (kind,), at
    inner, count = struct.unpack_from("<IQ", view, at)
    at += 12
    if inner == STRING:
        items = []
        for _ in range(count):
            text, at = _string(view, at)
            items.append(text)
        return items, (ARRAY, STRING), at
    if inner == ARRAY:
        raise ValueError("arrays of arrays are not read here")
    numbers, at = _numbers(view, at, inner, count)
    return numbers, (ARRAY, inner), at


def read_fields(path: str | Path) -> dict[str, Field]:
    """Every metadata key of the GGUF at `path`, in file order."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
        magic, version, _tensors, count = struct.unpack_from("<4sIQQ", view, 0)
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{path} is not a GGUF file of version 2 or 3")
        fields, at = {}, 24
        for _ in range(count):
            key, at = _string(view, at)
            (kind,) = struct.unpack_from("<I", view, at)
            value, types, at = _value(view, at + 4, kind)
            fields[key] = Field(value, types)
        return fields
