"""GGUF file facts from the header alone: metadata, tensor table, and whether the file is whole.

Guarantees: reads only the header and tensor table (never the weights); a file that is not
a GGUF, or is cut short, or lists tensors past its end, is a `ModelLoadError` with a
`LoadProblem` saying which, in a sentence without bytes or reprs (what the file looks like
instead, from `app/gguf/magic.py`; the bytes, names and numbers in its `details`); no other
exception escapes for a bad file. A split model
(`NAME-00001-of-00003.gguf`, llama.cpp's naming) is read as one: `read_model` takes the
metadata from the first part and the tensors of every part, and names a missing part.
"""

from __future__ import annotations

import mmap
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.errors import LoadProblem, ModelLoadError
from app.gguf.cursor import DAMAGED, Cursor, Skipped, keep_small
from app.gguf.magic import HEAD, MAGIC, not_gguf

SPLIT_NAME = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
_KIND_NAMES = {
    0: "u8",
    1: "i8",
    2: "u16",
    3: "i16",
    4: "u32",
    5: "i32",
    6: "f32",
    7: "bool",
    8: "str",
    10: "u64",
    11: "i64",
    12: "f64",
}
# ggml type id → (elements per block, bytes per block), for the size check of the data section.
_TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
    39: (32, 17),
}
_TYPE_NAMES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    6: "Q5_0",
    7: "Q5_1",
    8: "Q8_0",
    10: "Q2_K",
    11: "Q3_K",
    12: "Q4_K",
    13: "Q5_K",
    14: "Q6_K",
    30: "BF16",
    39: "MXFP4",
}
_FILE_TYPES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    32: "BF16",
    38: "MXFP4_MOE",
}


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int

    @property
    def elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        size = _TYPE_SIZES.get(self.ggml_type)
        if size is None:
            return None
        block, block_bytes = size
        return -(-self.elements // block) * block_bytes


@dataclass(frozen=True)
class GgufInfo:
    """What the header of a GGUF file says."""

    path: Path
    file_size: int
    version: int
    metadata: dict[str, Any] = field(repr=False)
    tensors: tuple[TensorInfo, ...] = field(repr=False)
    vocab_size: int = 0
    omitted: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)
    """Large arrays left out of `metadata`: key → (item type, length)."""

    def get(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(key, default)

    @property
    def architecture(self) -> str:
        return str(self.get("general.architecture", ""))

    def arch_value(self, name: str, default: Any = None) -> Any:
        return self.get(f"{self.architecture}.{name}", default)

    def int_value(self, name: str, default: int = 0) -> int:
        """The architecture's integer `name`; a `ModelLoadError` when the header holds another
        type there (a damaged or hostile file must not pass for a model)."""
        value = self.arch_value(name, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelLoadError(
                LoadProblem.NOT_GGUF,
                self.path,
                DAMAGED,
                f"Its header holds {value!r} for {self.architecture}.{name},"
                " where a whole number belongs.",
            )
        return value

    @property
    def context_length(self) -> int:
        return self.int_value("context_length")

    @property
    def chat_template(self) -> str | None:
        value = self.get("tokenizer.chat_template")
        return value if isinstance(value, str) else None

    @property
    def weights_bytes(self) -> int:
        """Bytes of tensor data (what llama.cpp maps or copies into memory)."""
        return sum(t.nbytes or 0 for t in self.tensors)

    @property
    def parameter_count(self) -> int:
        return sum(t.elements for t in self.tensors)

    @property
    def quantization(self) -> str:
        file_type = self.get("general.file_type")
        if isinstance(file_type, int) and file_type in _FILE_TYPES:
            return _FILE_TYPES[file_type]
        counts: dict[int, int] = {}
        for t in self.tensors:
            counts[t.ggml_type] = counts.get(t.ggml_type, 0) + t.elements
        top = max(counts, key=lambda k: counts[k]) if counts else -1
        return _TYPE_NAMES.get(top, f"type {top}")

    @property
    def kv_bytes_per_token(self) -> int:
        return self.kv_cache_bytes(1)

    def kv_cache_bytes(self, n_ctx: int) -> int:
        """Bytes of an f16 KV cache for `n_ctx` positions (all layers, full size)."""
        layers = self.int_value("block_count")
        heads = self.int_value("attention.head_count", 1) or 1
        kv_heads = self.arch_value("attention.head_count_kv", heads)
        if isinstance(kv_heads, list):  # per-layer counts
            numbers = [k for k in kv_heads if isinstance(k, int) and not isinstance(k, bool)]
            kv_heads = max(numbers) if numbers and len(numbers) == len(kv_heads) else heads
        else:
            kv_heads = self.int_value("attention.head_count_kv", heads)
        embd = self.int_value("embedding_length")
        key_len = self.int_value("attention.key_length", embd // max(heads, 1))
        value_len = self.int_value("attention.value_length", key_len)
        return n_ctx * layers * int(kv_heads) * (key_len + value_len) * 2


def read_gguf(path: str | Path) -> GgufInfo:
    """The header facts of the GGUF file at `path`, or a `ModelLoadError` saying what is wrong."""
    p = Path(path)
    try:
        info = p.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
            what = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
            raise ModelLoadError(LoadProblem.NOT_GGUF, p, f"it is {what}, not a file")
        size = info.st_size
        f = p.open("rb")
    except FileNotFoundError as exc:
        raise ModelLoadError(LoadProblem.MISSING_FILE, p, "there is no such file") from exc
    except OSError as exc:
        raise ModelLoadError(
            LoadProblem.MISSING_FILE, p, f"it cannot be opened ({exc.strerror})"
        ) from exc
    with f:
        head = f.read(HEAD)
        if size < 24 or not head.startswith(MAGIC):  # 24: the magic, version and two counts
            raise not_gguf(p, head, size)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(Cursor(data, p), size)


def _parse(cur: Cursor, size: int) -> GgufInfo:
    p = cur.path
    cur.pos = len(MAGIC)
    version = cur.take("<I", 4)
    if version not in (2, 3):
        if version == 1:
            reason = "it is a GGUF file of version 1, too old for llama.cpp: convert it again"
        elif 3 < version < 100:
            reason = f"it is a GGUF file of version {version}, newer than this app can read"
        else:
            reason = DAMAGED
        facts = f"Its header says GGUF version {version}; versions 2 and 3 are read."
        raise ModelLoadError(LoadProblem.NOT_GGUF, p, reason, facts)
    n_tensors, n_kv = cur.take("<Q", 8), cur.take("<Q", 8)
    if n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise ModelLoadError(
            LoadProblem.NOT_GGUF,
            p,
            DAMAGED,
            f"Its header counts {n_tensors:,} tensors and {n_kv:,} metadata entries;"
            " no model has more than 1,000,000 of either.",
        )
    metadata: dict[str, Any] = {}
    omitted: dict[str, tuple[str, int]] = {}
    vocab_size = 0
    for _ in range(n_kv):
        key = cur.string()
        kind = cur.take("<I", 4)
        value = cur.value(kind, keep_small)
        if key == "tokenizer.ggml.tokens":
            vocab_size = value.count if isinstance(value, Skipped) else len(value)
        if isinstance(value, Skipped):
            omitted[key] = (_KIND_NAMES.get(value.item_kind, "array"), value.count)
        else:
            metadata[key] = value
    tensors = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.take("<I", 4)
        if n_dims > 8:
            raise ModelLoadError(
                LoadProblem.NOT_GGUF, p, DAMAGED, f"Tensor “{name}” has {n_dims} dimensions."
            )
        shape = tuple(cur.take("<Q", 8) for _ in range(n_dims))
        tensors.append(TensorInfo(name, shape, cur.take("<I", 4), cur.take("<Q", 8)))
    alignment = int(metadata.get("general.alignment", 32) or 32)
    data_start = -(-cur.pos // alignment) * alignment
    for t in tensors:
        nbytes = t.nbytes
        if nbytes is not None and data_start + t.offset + nbytes > size:
            raise ModelLoadError(
                LoadProblem.TRUNCATED,
                p,
                "the file is cut short (an unfinished download or copy?)",
                f"Tensor “{t.name}” runs past the end of the file ({size:,} bytes).",
            )
    return GgufInfo(p, size, version, metadata, tuple(tensors), vocab_size, omitted)


def model_parts(path: str | Path) -> tuple[Path, ...]:
    """The files of the model whose first (or only) file is `path`, in order."""
    p = Path(path)
    m = SPLIT_NAME.match(p.name)
    if m is None:
        return (p,)
    count = int(m["count"])
    names = (f"{m['stem']}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1))
    return tuple(p.with_name(name) for name in names)


def read_model(path: str | Path) -> GgufInfo:
    """`read_gguf` for a whole model: a split model's parts read together (sizes and tensors
    summed, metadata from the first part); a missing or damaged part is a `ModelLoadError`."""
    parts = model_parts(path)
    if len(parts) == 1:
        return read_gguf(parts[0])
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise ModelLoadError(
            LoadProblem.MISSING_FILE,
            parts[0],
            f"part{'s' if len(missing) > 1 else ''} {', '.join(missing)} of this split model"
            f" {'are' if len(missing) > 1 else 'is'} not in the folder",
        )
    first = read_gguf(parts[0])
    declared = first.get("split.count")
    if declared is not None and int(declared) != len(parts):
        raise ModelLoadError(
            LoadProblem.NOT_GGUF,
            parts[0],
            f"its name says {len(parts)} parts but its header says {declared}",
        )
    rest = [read_gguf(p) for p in parts[1:]]
    return replace(
        first,
        file_size=first.file_size + sum(r.file_size for r in rest),
        tensors=first.tensors + tuple(t for r in rest for t in r.tensors),
    )
