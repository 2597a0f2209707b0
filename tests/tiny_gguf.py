"""The steps every tiny, random-weight test GGUF shares (`tests/tiny_models.py`,
`tests/tiny_models_more.py`): what a family's file says besides its weights (`Family`, `Vocab`),
its fixtures (the official chat template, a llama.cpp vocabulary decompressed once), the keys
written alike (shape, BPE tokenizer), writing the file, and building it once per argument set.

Guarantees: writing is deterministic — the keys go in the order the caller adds them, then the
chat template, then the tensors in their order — so the same arguments give the same bytes. A
built file is cached in `cache_dir()` under a key of the builder's version, the family, the seed,
its `Family`, the vocabulary fixture's hash and the template; a family not in a builder's
specs is a ValueError that names the ones it has.
"""

from __future__ import annotations

import hashlib
import lzma
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.session_dirs import build_once
from tests.tiny_gpt_oss import cache_dir

FIXTURES = Path(__file__).parent / "fixtures" / "tiny_models"
Writer = Callable[[Path, str, int, str], None]  # (path, family, seed, chat template)


@dataclass(frozen=True)
class Family:
    """What a family's GGUF says besides its weights."""

    arch: str
    template: str  # file name under FIXTURES
    vocab_file: str  # the tokenizer's file under FIXTURES
    pre: str  # tokenizer.ggml.pre
    bos: int
    eos: int
    add_bos: bool
    eog: frozenset[int]  # the ids llama.cpp must treat as end of generation
    markers: dict[str, int]  # control/added token text -> its single id
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 16
    tied: bool = False  # no output.weight: the embedding is reused
    rope_base: float = 10000.0
    context_length: int = 32768
    extra_ids: tuple[tuple[str, int], ...] = ()  # more tokenizer.ggml.*_token_id keys


@dataclass(frozen=True)
class Vocab:
    """A tokenizer in GGUF's form (`tokenizer.ggml.*`)."""

    model: str
    tokens: list[str]
    types: list[int]
    merges: list[str]


@dataclass(frozen=True)
class TinyFamilies:
    """A builder's families: their descriptions, templates, markers and cached files."""

    specs: Mapping[str, Family]
    version: int  # part of every cache key: raise it when the bytes written change
    write: Writer

    def spec(self, family: str) -> Family:
        """The family's description; a ValueError names the known families."""
        if family not in self.specs:
            raise ValueError(f"unknown family {family!r}; expected one of {tuple(self.specs)}")
        return self.specs[family]

    def template(self, family: str) -> str:
        """The family's official chat template, as stored in its GGUF."""
        return (FIXTURES / self.spec(family).template).read_text(encoding="utf-8")

    def markers(self, family: str) -> dict[str, int]:
        """The family's marker tokens and the single id each must tokenize to."""
        return dict(self.spec(family).markers)

    def build(self, family: str, seed: int = 1234, chat_template: str | None = None) -> Path:
        """The path of a tiny GGUF of `family` (built once per argument set, then cached); its
        `tokenizer.chat_template` is `chat_template`, by default the family's official one."""
        f = self.spec(family)
        text = chat_template if chat_template is not None else self.template(family)
        vocab = hashlib.sha256((FIXTURES / f.vocab_file).read_bytes()).hexdigest()
        key_text = f"{self.version}:{family}:{seed}:{f}:{vocab}:{text}"
        key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
        path = cache_dir() / f"tiny-{family}-{key}.gguf"
        return build_once(path, lambda partial: self.write(partial, family, seed, text))


def decompressed(name: str) -> Path:
    """A fixture's `.gguf.xz` (a llama.cpp vocabulary), decompressed once into the cache."""
    packed = FIXTURES / name
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()[:16]
    path = cache_dir() / f"{packed.name.removesuffix('.gguf.xz')}-{digest}.gguf"

    def write(part: Path) -> None:
        part.write_bytes(lzma.decompress(packed.read_bytes()))

    return build_once(path, write)


def _count(w: Any, key: str, value: int | Sequence[int]) -> None:
    """One count for the model, or one for each layer."""
    if isinstance(value, int):
        w.add_uint32(key, value)
    else:
        w.add_array(key, list(value))


def add_shape(
    w: Any, f: Family, blocks: int, n_embd: int, ff: int | Sequence[int], kv: int | Sequence[int]
) -> None:
    """The `{arch}.*` keys every family writes first: context, widths, heads and head size."""
    a = f.arch + "."
    w.add_uint32(a + "context_length", f.context_length)
    w.add_uint32(a + "embedding_length", n_embd)
    w.add_uint32(a + "block_count", blocks)
    _count(w, a + "feed_forward_length", ff)
    w.add_uint32(a + "attention.head_count", f.n_head)
    _count(w, a + "attention.head_count_kv", kv)
    w.add_uint32(a + "attention.key_length", f.head_dim)
    w.add_uint32(a + "attention.value_length", f.head_dim)


def add_bpe_tokenizer(
    w: Any, f: Family, vocab: Vocab, extra_ids: Sequence[tuple[str, int]]
) -> None:
    """A BPE vocabulary's `tokenizer.ggml.*` keys with the family's ids; no eos appended."""
    w.add_tokenizer_model(vocab.model)
    w.add_tokenizer_pre(f.pre)
    w.add_token_list(vocab.tokens)
    w.add_token_types(vocab.types)
    w.add_token_merges(vocab.merges)
    w.add_bos_token_id(f.bos)
    w.add_eos_token_id(f.eos)
    for name, value in extra_ids:
        w.add_uint32(f"tokenizer.ggml.{name}_token_id", value)
    w.add_add_bos_token(f.add_bos)
    w.add_add_eos_token(False)


def write_gguf(
    path: Path,
    family: str,
    f: Family,
    keys: Callable[[Any], None],
    chat_template: str,
    tensors: Mapping[str, np.ndarray],
) -> None:
    """The file: its name, the keys `keys` adds (in order), the template, then the tensors."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch=f.arch)
    w.add_string("general.name", f"tiny-{family}-test")
    keys(w)
    w.add_chat_template(chat_template)
    for name, array in tensors.items():
        w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
