"""Reading a GGUF header's values: scalars, strings and (nested) arrays, bounds-checked.

Guarantees: a read past the end is a `ModelLoadError` (TRUNCATED); an unknown value type or
arrays nested deeper than `MAX_ARRAY_DEPTH` is NOT_GGUF (said as `DAMAGED`, with the facts in
the error's `details`); large arrays (a vocabulary) are
stepped over, keeping only their length and item type (`Skipped`), so a header of any size
is read in time linear in its bytes without holding its items.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import LoadProblem, ModelLoadError

_SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
_STRING, _ARRAY = 8, 9
DAMAGED = "its header is damaged (it may be unfinished, or not really a GGUF model file)"
ENDS_EARLY = "the file is cut short: it ends inside its header"


class Cursor:
    def __init__(self, data: bytes | mmap.mmap, path: Path) -> None:
        self.data, self.pos, self.path = data, 0, path

    def take(self, fmt: str, size: int) -> Any:
        if self.pos + size > len(self.data):
            raise ModelLoadError(LoadProblem.TRUNCATED, self.path, ENDS_EARLY)
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def string(self) -> str:
        length = self.take("<Q", 8)
        if self.pos + length > len(self.data):
            raise ModelLoadError(LoadProblem.TRUNCATED, self.path, ENDS_EARLY)
        raw = bytes(self.data[self.pos : self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def _skip_strings(self, count: int) -> None:
        """Step over `count` strings reading only their lengths (a vocabulary: ~200,000)."""
        data, pos, end, unpack = self.data, self.pos, len(self.data), struct.unpack_from
        for _ in range(count):
            if pos + 8 > end:
                pos = end + 1
                break
            pos += 8 + unpack("<Q", data, pos)[0]
        if pos > end:
            raise ModelLoadError(LoadProblem.TRUNCATED, self.path, ENDS_EARLY)
        self.pos = pos

    def value(self, kind: int, keep: Callable[[int], bool] = lambda n: True, depth: int = 0) -> Any:
        if kind in _SCALARS:
            fmt, size = _SCALARS[kind]
            return self.take(fmt, size)
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            if depth >= MAX_ARRAY_DEPTH:
                raise ModelLoadError(
                    LoadProblem.NOT_GGUF,
                    self.path,
                    DAMAGED,
                    f"Its header nests arrays deeper than {MAX_ARRAY_DEPTH} levels.",
                )
            item_kind = self.take("<I", 4)
            count = self.take("<Q", 8)
            if item_kind in _SCALARS and not keep(count):
                self.pos += _SCALARS[item_kind][1] * count  # skip large numeric arrays
                return Skipped(count, item_kind)
            if item_kind == _STRING and not keep(count):
                self._skip_strings(count)
                return Skipped(count, item_kind)
            items = [self.value(item_kind, depth=depth + 1) for _ in range(count)]
            return items if keep(count) else Skipped(count, item_kind)
        raise ModelLoadError(
            LoadProblem.NOT_GGUF, self.path, DAMAGED, f"Unknown metadata value type {kind}."
        )


@dataclass(frozen=True)
class Skipped:
    """A large array whose items were not kept (only its length and item type)."""

    count: int
    item_kind: int


MAX_ARRAY_DEPTH = 8  # llama.cpp itself reads one level; more is a damaged or hostile file


def keep_small(count: int) -> bool:
    return count <= 4096


__all__ = ["DAMAGED", "ENDS_EARLY", "MAX_ARRAY_DEPTH", "Cursor", "Skipped", "keep_small"]
