"""The layout of a sequence's KV state as llama.cpp writes it, read and re-laid (pure: bytes in,
bytes out; no llama.cpp).

Why: llama.cpp (llama-cpp-python 0.3.36) writes a sliding-window cache's state without the
cells outside the window, and reads a state back into cells packed from the first free one. A
fresh evaluation left position p in cell p (with the full-size window cache, `swa_full`), so a
restored state sits in other cells than the evaluation it continues; CPU attention over cells laid
out otherwise rounds otherwise, and on Gemma 3 that moves the next logits by up to 2.3. Filling
the state back down to position 0 with empty (zero) cells, which the window masks, puts every
cell where the fresh evaluation put it: the logits are then bit for bit those of the evaluation
(`tests/engine/test_kv_windowed.py`, which also pins the unpadded restore as inexact so that an
upgrade of llama.cpp shows when the workaround is no longer needed).

Guarantees:
- `parse` reads a state written by `llama_state_seq_get_data[_ext]`: its 8-byte header, then one
  section per cache (the whole-attention cache first, then the window's), each one stream per
  sequence slot with its cells (position, one sequence each, no extended cell data) and its keys
  and values per layer. Anything else — a foreign layout, a length that does not add up, cells
  not in ascending contiguous positions — is None: such a state is not re-laid, and the caller
  evaluates the prompt instead.
- `anchored(state, window)` is the state with every section after the first filled down to
  position 0, only where every filled position is outside the window of the next token; the
  first section (the whole-attention cache) must already start at 0. With `whole=False` the
  state is a window cache's only (a partial state: `checkpoints.py`) and every section is
  filled. None when it cannot be.
- `cuttable(count, floor, window)`: a state whose real cells start at `floor` may be cut back to
  `count` tokens only when the window of the token at `count` starts at or above it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

_HEADER = 8  # llama.cpp's io magic and the sequence id
_CELL = np.dtype([("pos", "<i4"), ("n_seq", "<u4"), ("seq", "<i4")])  # one sequence a cell


@dataclass(frozen=True)
class Stream:
    """One stream of one cache section: its cells and each layer's key and value blocks."""

    positions: range  # ascending, contiguous
    seq: int
    v_trans: int
    keys: tuple[tuple[bytes, int, bytes], ...]  # (type and row head, row bytes, rows)
    values: tuple[tuple[bytes, int, int, bytes], ...]  # (head, unit bytes, rows of units, data)


@dataclass(frozen=True)
class Section:
    """One cache's part of the state: `streams` is None for a stream without this sequence."""

    streams: tuple[Stream | None, ...]


@dataclass(frozen=True)
class Layout:
    header: bytes
    sections: tuple[Section, ...]


class _Short(Exception):
    """The bytes end before what they say they hold."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise _Short
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def done(self) -> bool:
        return self.at == len(self.data)


def parse(state: bytes) -> Layout | None:
    """The layout of `state` (see the guarantees), or None."""
    reader = _Reader(state)
    try:
        header = reader.take(_HEADER)
        sections = []
        while not reader.done():
            sections.append(_section(reader))
    except (_Short, struct.error, ValueError):
        return None
    return Layout(header, tuple(sections)) if sections else None


def _section(r: _Reader) -> Section:
    n_stream = r.u32()
    if not 0 < n_stream <= 256:
        raise ValueError("stream count")
    streams: list[Stream | None] = []
    for _ in range(n_stream):
        count = r.u32()
        streams.append(_stream(r, count) if count else None)
    return Section(tuple(streams))


def _stream(r: _Reader, count: int) -> Stream:
    cells = np.frombuffer(r.take(_CELL.itemsize * count), dtype=_CELL)
    if (cells["n_seq"] != 1).any() or (cells["seq"] != cells["seq"][0]).any():
        raise ValueError("cells of several sequences")
    first = int(cells["pos"][0])
    if first < 0 or (cells["pos"] != np.arange(first, first + count)).any():
        raise ValueError("positions not ascending and contiguous")
    positions, seq = range(first, first + count), int(cells["seq"][0])
    v_trans, n_layer = r.u32(), r.u32()
    if v_trans > 1 or not 0 < n_layer <= 4096:
        raise ValueError("layers")
    keys = []
    for _ in range(n_layer):
        head = r.take(12)  # type (i32), row size (u64)
        row = int(struct.unpack_from("<Q", head, 4)[0])
        keys.append((head, row, r.take(row * count)))
    values = []
    for _ in range(n_layer):
        if v_trans:
            head = r.take(12)  # type (i32), element size (u32), elements per cell (u32)
            unit, rows = struct.unpack_from("<II", head, 4)
            values.append((head, int(unit), int(rows), r.take(int(unit) * int(rows) * count)))
        else:
            head = r.take(12)
            row = int(struct.unpack_from("<Q", head, 4)[0])
            values.append((head, row, 1, r.take(row * count)))
    return Stream(positions, seq, v_trans, tuple(keys), tuple(values))


def encode(layout: Layout) -> bytes:
    """The bytes of `layout` (as llama.cpp reads them)."""
    out = [layout.header]
    for section in layout.sections:
        out.append(struct.pack("<I", len(section.streams)))
        for stream in section.streams:
            if stream is None:
                out.append(struct.pack("<I", 0))
                continue
            out.append(struct.pack("<I", len(stream.positions)))
            cells = np.empty(len(stream.positions), dtype=_CELL)
            cells["pos"], cells["n_seq"], cells["seq"] = stream.positions, 1, stream.seq
            out.append(cells.tobytes())
            out.append(struct.pack("<II", stream.v_trans, len(stream.keys)))
            for head, _, rows in stream.keys:
                out += [head, rows]
            for vhead, _, _, data in stream.values:
                out += [vhead, data]
    return b"".join(out)


def _filled(stream: Stream, first: int) -> Stream:
    """`stream` with zero cells for positions 0..first-1 before its own."""
    keys = tuple((h, row, bytes(row * first) + rows) for h, row, rows in stream.keys)
    count = len(stream.positions)
    values = []
    for head, unit, rows, data in stream.values:
        if stream.v_trans:  # one run of `count` units per element: each run grows in front
            runs = np.frombuffer(data, dtype=np.uint8).reshape(rows, unit * count)
            front = np.zeros((rows, unit * first), dtype=np.uint8)
            data = np.concatenate((front, runs), axis=1).tobytes()
        else:
            data = bytes(unit * first) + data
        values.append((head, unit, rows, data))
    return Stream(range(stream.positions.stop), stream.seq, stream.v_trans, keys, tuple(values))


def _starts(section: Section) -> list[tuple[int, int]]:
    """(first, last) position of each stream that holds cells."""
    return [(s.positions[0], s.positions[-1]) for s in section.streams if s is not None]


def anchored(state: bytes, window: int, *, whole: bool = True) -> bytes | None:
    """`state` laid as a fresh evaluation lays it (see the guarantees), or None."""
    layout = parse(state)
    if layout is None:
        return None
    if whole and not all(first == 0 for first, _ in _starts(layout.sections[0])):
        return None
    sections = [layout.sections[0]] if whole else []
    for section in layout.sections[1:] if whole else layout.sections:
        streams: list[Stream | None] = []
        for stream in section.streams:
            if stream is None or stream.positions[0] == 0:
                streams.append(stream)
                continue
            first, last = stream.positions[0], stream.positions[-1]
            if window <= 0 or (last + 1) - (first - 1) < window:
                return None  # a filled position the next token would see
            streams.append(_filled(stream, first))
        sections.append(Section(tuple(streams)))
    return encode(Layout(layout.header, tuple(sections)))


def cuttable(count: int, floor: int, window: int) -> bool:
    """Whether a state whose real cells start at `floor` may be cut back to `count` tokens: the
    window of the token at `count` (it sees the `window` positions up to itself) lies above it."""
    return floor == 0 or count - window + 1 >= floor
