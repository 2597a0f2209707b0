"""The loaded model's tokenizer, seen from the app side (answers cached per model)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from app.engine.protocol import ModelBackend


class ModelTokenizer:
    """The `Tokenizer` of the model loaded in a backend."""

    def __init__(self, client: ModelBackend) -> None:
        self._client = client
        info = client.info
        self.n_vocab = info.n_vocab if info else 0

    @cached_property
    def _specials(self) -> dict[str, Any]:
        value: dict[str, Any] = self._client.call("specials")
        return value

    @property
    def eos_id(self) -> int:
        return int(self._specials["eos"])

    @property
    def bos_ids(self) -> list[int]:
        bos = int(self._specials["bos"])
        return [bos] if self._specials["add_bos"] and bos >= 0 else []

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        if not text:
            return []
        ids: list[int] = self._client.call("tokenize", text, special)
        return ids

    @cached_property
    def _table(self) -> list[bytes]:
        table: list[bytes] = self._client.call("token_table")
        return table

    def token_table(self) -> Sequence[bytes]:
        return self._table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        pieces: list[bytes] = self._client.call("special_bytes", list(ids))
        return pieces
