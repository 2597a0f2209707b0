"""The compactions the server made, kept for the requests that resend the same conversation
(`serve --compact`).

Agent clients resend the whole conversation with each request, so a compaction made for one
request (`app/engine/turn/compaction.py`) would be made again for the next one; the server keeps
what it made and hands the one that still applies to the next request as its
`GenerationRequest.compaction`, so the next prompt starts with the same summary (and the same
tokens: the KV cache of that prefix is reused) instead of a new summary.

Guarantees: `Compactions` is a bounded LRU (`KEPT` entries) keyed by tenant and fingerprint:
one tenant never gets another's compaction; `find` gives the kept compaction that applies to a
conversation (`app/domain/compaction.py` `applies`: its fingerprint is that of the
conversation's first messages after the header, and an exchange follows them), the one that
covers the most when several do; it is safe to use from several engine threads. `carried`
passes a turn's events through unchanged, keeps each compaction the turn made, and says
(`Reused`, just before the first `ContextFit`) when the prompt carried a kept compaction
without making a new one. `said` and `usage` are how the answer tells the client (the
`X-Harmony-Desk-Compacted` header and the usage's `compacted` object).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from app.domain.compaction import Compaction, applies, fingerprint, header_of
from app.domain.events import Compacted, ContextFit, TurnEvent
from app.domain.messages import Conversation

KEPT = 64  # compactions kept, all tenants together
HEADER = "X-Harmony-Desk-Compacted"


@dataclass(frozen=True)
class Reused:
    """A server item: the prompt carries `compaction`, kept from an earlier request, and no new
    summary was made."""

    compaction: Compaction


class Compactions:
    """The compactions the server made (see the module guarantees)."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[str, str], Compaction] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, tenant: str, compaction: Compaction) -> None:
        """Keep `compaction` for `tenant`'s later requests (the least recently used goes)."""
        key = (tenant, compaction.fingerprint)
        with self._lock:
            self._kept[key] = compaction
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def find(self, tenant: str, conversation: Conversation) -> Compaction | None:
        """The kept compaction of `tenant` that applies to `conversation`, covering the most
        (None: none does)."""
        with self._lock:
            spans = sorted({c.covered for (t, _), c in self._kept.items() if t == tenant})
        rest = conversation.messages[len(header_of(conversation)) :]
        for covered in reversed(spans):
            if covered >= len(rest):
                continue
            key = (tenant, fingerprint(rest[:covered]))
            with self._lock:
                found = self._kept.get(key)
                if found is not None:
                    self._kept.move_to_end(key)
            if found is not None and applies(conversation, found):
                return found
        return None


def carried(
    compactions: Compactions, tenant: str, kept: Compaction | None, events: Iterator[TurnEvent]
) -> Iterator[TurnEvent | Reused]:
    """`events` as they come, each compaction the turn made kept for `tenant`, and `Reused`
    before the first `ContextFit` when the prompt carried `kept` and no new one was made."""
    made = said = False
    for event in events:
        if isinstance(event, Compacted):
            compactions.keep(tenant, event.compaction)
            made = True
        elif isinstance(event, ContextFit) and not said:
            said = True
            if kept is not None and not made:
                yield Reused(kept)
        yield event


def said(compaction: Compaction, reused: bool) -> str:
    """The `X-Harmony-Desk-Compacted` header's value (ASCII: an HTTP header's)."""
    words = compaction.said().replace("\u2192", "->")
    return f"{words} (the kept summary, reused)" if reused else words


def usage(compaction: Compaction, reused: bool) -> dict[str, Any]:
    """The usage's `compacted` object."""
    return {
        "exchanges": compaction.exchanges,
        "tokens_before": compaction.tokens_before,
        "tokens_after": compaction.tokens_after,
        "reused": reused,
    }


__all__ = ["HEADER", "KEPT", "Compactions", "Reused", "carried", "said", "usage"]
