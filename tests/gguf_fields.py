"""A GGUF file's metadata, every value whole, for building test models (`tests/tiny_*.py`).

`gguf.GGUFReader` parses every element of an array through a memory-map view: Gemma 4's
vocabulary (262,144 tokens, scores and types) takes it a minute. The app's own header cursor
(`app/gguf/cursor.py`, told to keep every array) reads the same keys in a second; this adds
only each value's GGUF types, which the builders write back.

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

from app.gguf.cursor import Cursor

ARRAY = 9  # gguf.GGUFValueType.ARRAY


@dataclass(frozen=True)
class Field:
    """One key's value and its GGUF value types (`(ARRAY, item type)` for an array)."""

    value: Any
    types: tuple[int, ...]


def read_fields(path: str | Path) -> dict[str, Field]:
    """Every metadata key of the GGUF at `path`, in file order."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
        magic, version, _tensors, count = struct.unpack_from("<4sIQQ", view, 0)
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{path} is not a GGUF file of version 2 or 3")
        cursor, fields = Cursor(view, Path(path)), {}
        cursor.pos = 24
        for _ in range(count):
            key = cursor.string()
            kind = cursor.take("<I", 4)
            item = (struct.unpack_from("<I", view, cursor.pos)[0],) if kind == ARRAY else ()
            fields[key] = Field(cursor.value(kind), (kind, *item))
        return fields
