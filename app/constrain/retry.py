"""JSON mode's retry: from an answer that broke its schema back to the token before the value
that broke it.

Guarantees: `backup` finds the answer's text among one generation's token ids and the token at
which the repair starts (as `spans.backup_offset` places it; the last retry of a violation
goes further back, to before the member); it gives the tokens to keep
(the generation before that token), the tokens to exclude there, and the answer's text before
that point — or None when the place cannot be found (the answer is then reported, not
retried). `retriable` says which verdicts a retry can repair: a parsed answer that broke a
keyword, not a cut or unparsable one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.constrain.spans import backup_offset
from app.domain.events import JsonResult
from app.errors import ErrorCode

MAX_RETRIES = 3  # attempts after the first, per violation (its path and keyword)
MAX_RETRIES_IN_ALL = 6  # per answer, whatever they were for


@dataclass(frozen=True)
class Backup:
    prefix: tuple[int, ...]  # the generation's tokens kept
    banned: tuple[int, ...]  # excluded at that point: the earlier choice (taking a member
    # back: every token that opens with its first byte)
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
    tokenize: Callable[[str], list[int]] | None = None,
) -> Backup | None:
    """Where to regenerate `text` (the answer, spelt by the end of `tokens`) from. `wider`
    (the last retry of a violation): the member itself is taken back, from its first byte
    (the comma before it) — with `tokenize`, a token that wrote bytes before that one as well
    is replaced by tokens that end there — and every token opening with that byte is
    excluded, so that the container ends there if the grammar lets it."""
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
            plain = Backup(tuple(tokens[:k]), (tokens[k],), _text(joined, at, position))
            if not wider:
                return plain
            bridge = _bridge(joined[position:target], table, tokenize)
            if bridge is None:
                return plain
            first = joined[target : target + 1]
            banned = tuple(t for t, p in enumerate(table) if p[:1] == first)
            kept = _text(joined, at, target)
            return Backup((*tokens[:k], *bridge), banned or (tokens[k],), kept)
        position += len(piece)
    return None


def _text(joined: bytes, at: int, end: int) -> str:
    return joined[at:end].decode("utf-8", "replace") if end >= at else ""


def _bridge(
    head: bytes, table: Sequence[bytes], tokenize: Callable[[str], list[int]] | None
) -> list[int] | None:
    """Tokens that spell `head` exactly (none for nothing); None when it cannot be done."""
    if not head:
        return []
    if tokenize is None:
        return None
    try:
        ids = tokenize(head.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    spelt = b"".join(table[t] if 0 <= t < len(table) else b"\xff" for t in ids)
    return ids if spelt == head else None


__all__ = ["MAX_RETRIES", "MAX_RETRIES_IN_ALL", "Backup", "backup", "retriable"]
