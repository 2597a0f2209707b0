"""JSON mode's retry: from an answer that broke its schema back to the token before the value
that broke it.

Guarantees: `backup` finds the answer's text among one generation's token ids and the token at
which the repair starts (as `json_spans.backup_offset` places it, further back when the same
violation came back); it gives the tokens to keep
(the generation before that token), the token to exclude there, and the answer's text before
that point — or None when the place cannot be found (the answer is then reported, not
retried). `retriable` says which verdicts a retry can repair: a parsed answer that broke a
keyword, not a cut or unparsable one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.domain.events import JsonResult
from app.engine.json_spans import backup_offset
from app.errors import ErrorCode

MAX_RETRIES = 3  # attempts after the first, per violation (its path and keyword)
MAX_RETRIES_IN_ALL = 6  # per answer, whatever they were for


@dataclass(frozen=True)
class Backup:
    prefix: tuple[int, ...]  # the generation's tokens kept
    token: int  # the earlier choice, excluded at that point
    kept: str  # the answer's text before that point


def retriable(result: JsonResult) -> bool:
    return (
        not result.valid
        and result.code is ErrorCode.BODY_CONSTRAINT_VIOLATION
        and bool(result.keyword)
        and result.value is not None
    )


def backup(
    tokens: Sequence[int],
    table: Sequence[bytes],
    text: str,
    result: JsonResult,
    wider: bool = False,
) -> Backup | None:
    """Where to regenerate `text` (the answer, spelt by the end of `tokens`) from; `wider`
    when the same violation survived a retry at the value (the member itself is retried)."""
    offset = backup_offset(text, result.value, result.path, result.keyword, wider)
    if offset is None:
        return None
    pieces = [table[t] if 0 <= t < len(table) else b"" for t in tokens]
    joined = b"".join(pieces)
    at = joined.rfind(text.encode())
    if at < 0:
        return None
    target = at + len(text[:offset].encode())
    position = 0
    for k, piece in enumerate(pieces):
        if position + len(piece) > target:  # token k writes the first byte to repair
            kept = joined[at:position].decode("utf-8", "replace") if position >= at else ""
            return Backup(tuple(tokens[:k]), tokens[k], kept)
        position += len(piece)
    return None


__all__ = ["MAX_RETRIES", "MAX_RETRIES_IN_ALL", "Backup", "backup", "retriable"]
