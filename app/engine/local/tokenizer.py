"""The loaded model's tokenizer, seen from the app side (answers cached per model).

Guarantees: text is tokenized by the model itself; each `IMAGE_MARKER` in it becomes one
`IMAGE_ID` in its place (the text on either side tokenized apart, as llama.cpp's own
multimodal tokenizer splits a prompt at its images), so every template writes images where
they stand without knowing of them."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from app.domain.messages import IMAGE_MARKER
from app.engine.backend import ModelBackend
from app.engine.protocol import IMAGE_ID, Specials


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
        if IMAGE_MARKER not in text:
            return self._client.tokenize(text, special)
        out: list[int] = []
        for i, part in enumerate(text.split(IMAGE_MARKER)):
            if i:
                out.append(IMAGE_ID)
            if part:
                out += self._client.tokenize(part, special)
        return out

    @cached_property
    def _table(self) -> list[bytes]:
        return self._client.token_table()

    def token_table(self) -> Sequence[bytes]:
        return self._table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return self._client.special_bytes(ids)
