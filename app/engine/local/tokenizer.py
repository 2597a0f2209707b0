"""The loaded model's tokenizer, seen from the app side (answers cached per model)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from app.engine.protocol import ModelBackend, Specials


class ModelTokenizer:
    """The `Tokenizer` of the model loaded in a backend."""

    def __init__(self, client: ModelBackend) -> None:
        self._client = client
        info = client.info
        self.n_vocab = info.n_vocab if info else 0

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
        return self._client.tokenize(text, special)

    @cached_property
    def _table(self) -> list[bytes]:
        return self._client.token_table()

    def token_table(self) -> Sequence[bytes]:
        return self._table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return self._client.special_bytes(ids)
