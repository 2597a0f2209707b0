"""The loaded model's tokenizer, seen from the app side (answers cached per model).

Guarantees: text is tokenized by the model itself; each `IMAGE_MARKER` in it becomes one
`IMAGE_ID` in its place (the text on either side tokenized apart, as llama.cpp's own
multimodal tokenizer splits a prompt at its images), so every template writes images where
they stand without knowing of them. A text's ids are remembered (`MEMO` texts of at most
`MEMO_CHARS` characters, the least recently used forgotten first, all of them when another
model is loaded): a conversation rendered again each turn, and several times while it is
fitted to the context, asks the worker only for what is new — each question is a round trip
to its process."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import Any

from app.domain.messages import IMAGE_MARKER
from app.engine.backend import ModelBackend
from app.engine.protocol import IMAGE_ID, Specials

MEMO = 4096  # texts whose ids are remembered
MEMO_CHARS = 8192  # the longest text remembered


class ModelTokenizer:
    """The `Tokenizer` of the model loaded in a backend."""

    def __init__(self, client: ModelBackend) -> None:
        self._client = client
        info = client.info
        self.n_vocab = info.n_vocab if info else 0
        self._model: Any = info
        self._remembered = lru_cache(maxsize=MEMO)(self._asked)

    def _asked(self, text: str, special: bool) -> tuple[int, ...]:
        return tuple(self._client.tokenize(text, special))

    def _ids(self, text: str, special: bool) -> list[int]:
        if len(text) > MEMO_CHARS:
            return self._client.tokenize(text, special)
        if self._client.info is not self._model:  # another model: none of its answers hold
            self._model = self._client.info
            self._remembered.cache_clear()
        return list(self._remembered(text, special))

    @cached_property
    def _specials(self) -> Specials:
        return self._client.specials()

    @property
    def eos_id(self) -> int:
        return self._specials.eos

    @property
    def bos_ids(self) -> list[int]:
        bos = self._specials.bos
        return [bos] if self._specials.add_bos and bos >= 0 else []

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        if not text:
            return []
        if IMAGE_MARKER not in text:
            return self._ids(text, special)
        out: list[int] = []
        for i, part in enumerate(text.split(IMAGE_MARKER)):
            if i:
                out.append(IMAGE_ID)
            if part:
                out += self._ids(part, special)
        return out

    @cached_property
    def _table(self) -> list[bytes]:
        return self._client.token_table()

    def token_table(self) -> Sequence[bytes]:
        return self._table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return self._client.special_bytes(ids)
