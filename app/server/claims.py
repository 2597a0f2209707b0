"""A model loaded and served, and the claims requests make on it while they are answered.

Guarantees: a request claims the model that answers it (`hold`) and the claim lasts until its
response has ended, its stream included: `Claims`, an ASGI middleware around every request,
gives each claim back then (so the fleet never unloads a model under an answer); outside a
request (a test driving a route directly) a claim only marks the model used.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.server.served import ServedModel


@dataclass
class Resident:
    """A model loaded and served: its estimate in bytes, its file, how to unload it (None: it is
    another's, the window's), whether it stays (pinned), the claims on it now, when last used."""

    served: ServedModel
    bytes: int = 0
    path: str = ""
    close: Callable[[], None] | None = None
    pinned: bool = False
    claims: int = 0
    used: float = field(default_factory=time.monotonic)

    @property
    def evictable(self) -> bool:
        return self.close is not None and not self.pinned

    def entry(self) -> dict[str, Any]:
        s = self.served
        inputs = ["text", "image"] if s.sees_images else ["text"]  # as llama-server's router says
        outputs = ["text"] if s.chats else ["embeddings"]
        return {
            "id": s.name,
            "object": "model",
            "created": s.created,
            "owned_by": "harmony-desk",
            "architecture": {"input_modalities": inputs, "output_modalities": outputs},
            "status": {"value": "loaded"},
            "pinned": not self.evictable,
            "n_ctx": s.n_ctx,
        }


_CLAIMS: contextvars.ContextVar[list[Resident] | None] = contextvars.ContextVar(
    "model_claims", default=None
)


class Claims:
    """The ASGI middleware that gives back, when a response has ended, the claims its request
    made on models (see the module guarantees)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        claims: list[Resident] = []
        token = _CLAIMS.set(claims)
        try:
            await self.app(scope, receive, send)
        finally:
            _CLAIMS.reset(token)
            now = time.monotonic()
            for resident in claims:
                resident.claims -= 1
                resident.used = now


def hold(resident: Resident) -> ServedModel:
    resident.used = time.monotonic()
    claims = _CLAIMS.get()
    if claims is not None:  # within a request: given back when its response ends
        resident.claims += 1
        claims.append(resident)
    return resident.served


__all__ = ["Claims", "Resident", "hold"]
