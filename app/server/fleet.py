"""Several models behind one server: which model answers a request, loaded when first asked for,
unloaded when idle or when another needs the room.

Guarantees: a request's `model` is found (`resolve`), in this order, among the models loaded,
the models the server may load (`Loader.offers`: the library's, by file stem or title, without
regard to case) and the aliases (`app.server.aliases`); a name none of them knows is a 404 that
says where the list is. Embedding models are served the same way, each of its kind: a chat
request finds chat models only (one naming an embedding model is a 400 that says so), and
/v1/embeddings embedding models only (`claim(..., embeds=True)`); loading, the budget, unloading
and pins treat both alike. A model not loaded is loaded on the first request that names it, in a
worker of its own, one load at a time, within the memory budget: its estimate (`Loader.need`:
weights, a cache for each answer at once, buffers, projector — the fit check of the models page,
at the context that fits what the kept models leave) must fit what the pinned and the window's
models leave, else a 400 with the figures; the idle models loaded here are unloaded, least
recently used first, until it fits, and if busy ones are still in the way the request gets a 429
that names them (clients retry). A model is busy while any request that claimed it is being
answered, its stream included (`Claims`, an ASGI middleware around every request, gives each
claim back when the response has ended, so a model is never unloaded under an answer). A model
idle for `idle_s` is unloaded (`sweeping`), unless pinned; the default model is pinned, and a
model the window owns (`Resident.close` None) is never unloaded here. A failed load is a 400
that says why, remembered in the listing (`failed`) until a load succeeds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from app.domain.library import MemoryEstimate, ModelEntry, human_size
from app.errors import HarmonyDeskError
from app.server.aliases import DEFAULT, Aliases
from app.server.claims import Resident, hold
from app.server.errors import ApiError
from app.server.served import ServedModel

log = logging.getLogger("server")
SWEEP_S = 30.0  # how often idle models are looked for, at most
OFFERS_S = 5.0  # the library's list is read again after this long


@dataclass(frozen=True)
class Offer:
    """A model the server may load: the name clients use (its file's stem), its file, the
    library's title for it, its entry (what the estimate is made from; None: read it) and
    whether it is made for embeddings (served at /v1/embeddings only)."""

    name: str
    path: str
    title: str = ""
    entry: ModelEntry | None = None
    embeds: bool = False


@dataclass(frozen=True)
class Started:
    """A model loaded in a worker of its own, and how to unload it (which stops the worker)."""

    served: ServedModel
    close: Callable[[], None]


class Loader(Protocol):
    def offers(self) -> Sequence[Offer]:
        """The models the server may load (read again at each call: the library changes)."""
        ...

    def need(self, offer: Offer, room: int) -> MemoryEstimate:
        """`offer`'s estimate at the context it would be loaded with in `room` bytes."""
        ...

    def load(self, offer: Offer, need: MemoryEstimate) -> Started:
        """Load `offer` at `need.n_ctx` (blocking; a `HarmonyDeskError` says why not)."""
        ...


class Fleet:
    """See the module guarantees."""

    def __init__(
        self,
        default: Resident,
        *,
        loader: Loader | None = None,
        budget: int | None = None,
        idle_s: float | None = None,
        aliases: Aliases | None = None,
        pins: Sequence[str] = (),
    ) -> None:
        default.pinned = True
        self.pins = tuple(pins)
        self.default_name = default.served.name
        self.residents: dict[str, Resident] = {default.served.name: default}
        self.loader, self.budget, self.idle_s = loader, budget, idle_s
        self.aliases = aliases if aliases is not None else Aliases.of(DEFAULT)
        self.failed: dict[str, str] = {}
        self.loading = ""
        self._lock: asyncio.Lock | None = None
        self._offers: tuple[float, list[Offer]] = (-OFFERS_S, [])

    @classmethod
    def single(cls, served: ServedModel) -> Fleet:
        """One model, every name answered by it (the server before it had several)."""
        return cls(Resident(served))

    @property
    def default(self) -> ServedModel:
        return self.residents[self.default_name].served

    def offers(self) -> list[Offer]:
        """The models the loader offers, read again after `OFFERS_S`."""
        now = time.monotonic()
        if self.loader is not None and now - self._offers[0] >= OFFERS_S:
            self._offers = (now, list(self.loader.offers()))
        return self._offers[1]

    def _known(self, name: str, embeds: bool | None = False) -> str | None:
        """The loaded or offered model `name` names, of the kind asked (`embeds`: an embedding
        model; False: a chat model; None: either)."""
        lowered = name.lower()
        for known, resident in self.residents.items():
            if known.lower() == lowered and embeds in (None, not resident.served.chats):
                return known
        for offer in self.offers():
            if lowered in (offer.name.lower(), offer.title.lower()) and embeds in (
                None,
                offer.embeds,
            ):
                return offer.name
        return None

    def serves(self, name: str) -> bool:
        """Whether `name` is one of the chat models (loaded or offered), not an alias."""
        return self._known(name) is not None

    def embeds(self, name: str) -> bool:
        """Whether `name` is one of the embedding models loaded or offered here."""
        return self._known(name, embeds=True) is not None

    def resolve(self, name: str | None, embeds: bool | None = False) -> str:
        """The name of the model that answers a request for `name` (see the guarantees)."""
        if not name:
            return self.default_name
        known = self._known(name, embeds)
        if known is not None:
            return known
        if not embeds and self.embeds(name):
            raise ApiError(
                400,
                f"{name} is an embedding model: it answers /v1/embeddings, not chat requests",
                param="model",
                code="model_cannot_chat",
            )
        target = self.aliases.target(name) if embeds is not True else None
        if target == "":
            return self.default_name
        named = self._known(target, embeds) if target is not None else None
        if named is None:
            why = f" (its alias names {target}, which is not served)" if target else ""
            raise ApiError(
                404,
                f"the model {name!r} is not served here{why}: GET /v1/models lists the models",
                param="model",
                code="model_not_found",
            )
        return named

    async def claim(self, name: str | None, embeds: bool = False) -> ServedModel:
        """The model that answers `name` (an embedding model if `embeds`), loaded if it is not,
        held until the response ends."""
        resolved = self.resolve(name, embeds)
        resident = self.residents.get(resolved)
        if resident is None:
            async with self._guard():
                resident = self.residents.get(resolved) or await self._bring(resolved)
                return hold(resident)
        return hold(resident)

    def _guard(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _kept(self) -> int:
        return sum(r.bytes for r in self.residents.values() if not r.evictable)

    async def _bring(self, name: str) -> Resident:
        loader = self.loader
        offer = next((o for o in self.offers() if o.name == name), None)
        if loader is None or offer is None:  # resolved a moment ago; gone from the library since
            raise ApiError(404, f"the model {name!r} is no longer in the library", param="model")
        budget = self.budget if self.budget is not None else 1 << 62
        room = budget - self._kept()
        need = await asyncio.to_thread(loader.need, offer, room)
        if need.total > room:
            kept = ", ".join(n for n, r in self.residents.items() if not r.evictable)
            raise ApiError(
                400,
                f"{name} cannot be loaded: it needs about {human_size(need.total)} at"
                f" {need.n_ctx:,} tokens of context{need.at_once()}, and the models kept loaded"
                f" ({kept}) leave {human_size(max(0, room))} of this server's"
                f" {human_size(budget)}",
                param="model",
                code="model_too_big",
            )
        await self._make_room(name, need.total, budget)
        self.loading = name
        try:
            started = await asyncio.to_thread(loader.load, offer, need)
        except HarmonyDeskError as exc:
            self.failed[name] = exc.message
            raise ApiError(
                400, f"{name} could not be loaded: {exc.message}", param="model"
            ) from None
        finally:
            self.loading = ""
        self.failed.pop(name, None)
        resident = Resident(started.served, need.total, offer.path, started.close)
        self.residents[name] = resident
        log.info("loaded %s (%s at %d tokens)", name, human_size(need.total), need.n_ctx)
        return resident

    async def _make_room(self, name: str, need: int, budget: int) -> None:
        free = budget - sum(r.bytes for r in self.residents.values())
        idle = sorted(
            (r for r in self.residents.values() if r.evictable and r.claims == 0),
            key=lambda r: r.used,
        )
        for resident in idle:
            if free >= need:
                break
            if resident.claims or resident.served.name not in self.residents:
                continue  # claimed (or gone) while the one before was unloading
            await self._unload(resident, "to make room for " + name)
            free += resident.bytes
        if free < need:
            busy = ", ".join(n for n, r in self.residents.items() if r.evictable)
            raise ApiError(
                429,
                f"{name} needs about {human_size(need)} and {human_size(max(0, free))} is free"
                f" until {busy} end their answers: try again shortly",
                param="model",
                code="models_busy",
            )

    async def _unload(self, resident: Resident, why: str) -> None:
        name = resident.served.name
        self.residents.pop(name, None)
        log.info("unloading %s (%s)", name, why)
        if resident.close is not None:
            await asyncio.to_thread(resident.close)

    async def load(self, name: str, pin: bool = False) -> Resident:
        """Load the model `name` stands for (if it is not), pinned if asked."""
        resolved = self.resolve(name, embeds=None)
        async with self._guard():
            resident = self.residents.get(resolved) or await self._bring(resolved)
        resident.pinned = resident.pinned or pin
        return resident

    async def unload(self, name: str) -> str:
        """Unload the model `name` stands for; its name (a 4xx says why it cannot be)."""
        resolved = self.resolve(name, embeds=None)
        resident = self.residents.get(resolved)
        if resident is None:
            raise ApiError(400, f"{resolved} is not loaded", param="model", code="not_loaded")
        if resolved == self.default_name or resident.close is None:
            said = "the window's model" if resident.close is None else "the default model"
            raise ApiError(
                400, f"{resolved} is {said}: it stays loaded while the server runs", param="model"
            )
        if resident.claims:
            raise ApiError(
                409, f"{resolved} is answering {resident.claims} request(s)", param="model"
            )
        async with self._guard():
            await self._unload(resident, "asked to")
        return resolved

    async def sweep(self, now: float | None = None) -> list[str]:
        """Unload the models idle for `idle_s`; their names."""
        if not self.idle_s:
            return []
        now = time.monotonic() if now is None else now
        stale = [
            r
            for r in self.residents.values()
            if r.evictable and r.claims == 0 and now - r.used >= self.idle_s
        ]
        gone = []
        async with self._guard():
            for resident in stale:
                if resident.claims == 0 and resident.served.name in self.residents:
                    await self._unload(resident, f"idle for {self.idle_s:.0f} s")
                    gone.append(resident.served.name)
        return gone

    async def sweeping(self) -> None:
        """Load the pinned models, then sweep for as long as the server runs (a task of its
        lifespan); a pinned model that cannot be loaded is logged and listed as failed."""
        for name in self.pins:
            try:
                await self.load(name, pin=True)
            except ApiError as exc:
                log.error("the pinned model %s was not loaded: %s", name, exc.message)
        if not self.idle_s:
            return
        while True:
            await asyncio.sleep(min(SWEEP_S, max(1.0, self.idle_s / 2)))
            await self.sweep()

    def close(self) -> None:
        """Unload every model loaded here (when the server stops)."""
        for resident in list(self.residents.values()):
            if resident.close is not None and resident.served.name != self.default_name:
                self.residents.pop(resident.served.name, None)
                resident.close()

    def loaded(self) -> list[dict[str, Any]]:
        """The models loaded, as `/v1/models` lists them (llama-server's router's `status`)."""
        return [r.entry() for r in self.residents.values()]

    def unloaded(self) -> list[dict[str, Any]]:
        """The models that load on request, as `/v1/models` lists them."""
        entries: list[dict[str, Any]] = []
        for offer in self.offers():
            if offer.name in self.residents:
                continue
            status: dict[str, Any] = {
                "value": "loading" if self.loading == offer.name else "unloaded"
            }
            if offer.name in self.failed:
                status.update(failed=True, reason=self.failed[offer.name])
            created = int(offer.entry.modified) if offer.entry is not None else 0
            entry = {"id": offer.name, "object": "model", "created": created}
            entry.update(owned_by="harmony-desk", status=status)
            if offer.embeds:
                entry["architecture"] = {"output_modalities": ["embeddings"]}
            entries.append(entry)
        return entries

    def listing(self) -> list[dict[str, Any]]:
        """The models loaded, then those that load on request."""
        return [*self.loaded(), *self.unloaded()]

    def said(self) -> dict[str, Any]:
        """What `/harmony-desk/status` says of the models beside the default's counters."""
        now = time.monotonic()
        models = [
            {
                "name": name,
                "answering": r.claims,
                "pinned": not r.evictable,
                "memory": r.bytes,
                "idle_s": round(now - r.used, 1),
            }
            for name, r in self.residents.items()
        ]
        return {"models": models, "aliases": self.aliases.said(), "budget": self.budget}

    def __iter__(self) -> Iterator[Resident]:
        return iter(list(self.residents.values()))


__all__ = ["Fleet", "Loader", "Offer", "Started"]
