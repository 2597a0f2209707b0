"""The quick questions the app asks the model worker: tokens, the vocabulary, logits.

Guarantees: each question is one typed request answered by one `Answer` (or `Refused`, raised
as a `WorkerError` with the worker's words) within `QUERY_TIMEOUT_S`; a worker that does not
answer in time or dies is a `WorkerError`, and the client starts a new one for the next
request. The questions are answered between two decode steps, so they never wait for an
answer under way (a logits question waits for the generations under way: it evaluates a
prompt as a generation would). The vocabulary is asked once per loaded model: every session
and tokenizer on the client shares that one answer (Gemma's 262,144 pieces take a second to
cross the pipe), and a load, a restart or a death of the worker asks again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from app.engine.local.router import Router
from app.engine.protocol import (
    Answer,
    Embed,
    Evaluated,
    Keep,
    Logits,
    Query,
    Refused,
    RequestState,
    SpecialBytes,
    SpecialIds,
    Specials,
    Tokenize,
    TokenTable,
)
from app.errors import WorkerError

QUERY_TIMEOUT_S = 120.0


class QuickQuestions:
    """The questions of `WorkerClient` (which gives `_ensure_ready`, `_died` and `info`, the
    loaded model's facts: a new object at each load)."""

    info: Any
    _vocabulary: tuple[object, list[bytes]] | None = None  # the model asked of, its table

    def _ensure_ready(self) -> Router:
        raise NotImplementedError

    def _died(self) -> None:
        raise NotImplementedError

    def _ask(self, make: Callable[[int], Query | Embed]) -> Any:
        """The answer to one quick question; `WorkerError` when the worker cannot give it."""
        router = self._ensure_ready()
        query = make(router.new_id())
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        try:
            router.send(query)
            while (msg := router.next(query.request, timeout=0.1)) is None:
                if time.monotonic() > deadline:
                    router.finish(query.request, RequestState.FAILED)
                    raise WorkerError(
                        f"the model worker did not answer within {QUERY_TIMEOUT_S:g} s",
                        f"The unanswered question: {type(query).__name__}.",
                    )
        except WorkerError:
            self._died()
            raise
        if isinstance(msg, Refused):
            raise WorkerError(msg.message)
        assert isinstance(msg, Answer)
        return msg.value

    def tokenize(self, text: str, special: bool) -> list[int]:
        ids: list[int] = self._ask(lambda r: Tokenize(r, text, special))
        return ids

    def token_table(self) -> list[bytes]:
        """Each id's bytes, for the loaded model: one list shared by every caller (read it,
        never change it), asked again only once another model (or the same, again) loaded."""
        model, known = self.info, self._vocabulary
        if model is not None and known is not None and known[0] is model:
            return known[1]
        table: list[bytes] = self._ask(TokenTable)
        self._vocabulary = (model, table) if model is not None else None
        return table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        pieces: list[bytes] = self._ask(lambda r: SpecialBytes(r, tuple(ids)))
        return pieces

    def specials(self) -> Specials:
        found: Specials = self._ask(SpecialIds)
        return found

    def logits(self, prompt: Sequence[int]) -> tuple[int, bytes]:
        """How much of `prompt` the KV cache kept, and the next token's logits (float32)."""
        return (done := self.evaluate(prompt)).reused + done.restored, done.logits

    def evaluate(self, prompt: Sequence[int], keep: Keep | None = None) -> Evaluated:
        """`prompt` evaluated as a generation for `keep` is (snapshots looked for, kept)."""
        answer: Evaluated = self._ask(lambda r: Logits(r, tuple(prompt), keep))
        return answer
