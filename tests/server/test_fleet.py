"""Several models behind one server, their bookkeeping with a scripted loader (no worker; the
real `serve` loading and unloading real models is `test_fleet_serve.py`): names are found among
the loaded models, then the offered ones, then the aliases; a model is loaded on its first
request within the budget, the least recently used idle one unloaded to make room, a busy one
never (429), a model too big for what the kept ones leave refused with the figures (400); the
window's model and pinned ones are never unloaded; idle models are swept; a claim lasts until
its response has ended, stream included."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
from collections.abc import Sequence
from typing import Any

import httpx2 as httpx
import pytest

from app.domain.library import MemoryEstimate
from app.errors import LoadProblem, ModelLoadError
from app.server.aliases import Alias, Aliases
from app.server.claims import Claims, Resident
from app.server.errors import ApiError
from app.server.fleet import Fleet, Offer, Started
from app.server.served import ServedModel
from app.templates.registry import get_template

MIB = 1 << 20


def _served(name: str) -> ServedModel:
    return ServedModel(name=name, engine=cf.ThreadPoolExecutor(1), session=lambda: None,  # type: ignore[arg-type,return-value]
                       template=get_template("chatml"), n_ctx=4096)  # fmt: skip


class Scripted:
    """Offers models of given sizes; `load` makes a `ServedModel` and records loads and closes."""

    def __init__(self, sizes: dict[str, int], broken: Sequence[str] = ()) -> None:
        self.sizes, self.broken = sizes, set(broken)
        self.loaded: list[str] = []
        self.closed: list[str] = []

    def offers(self) -> Sequence[Offer]:
        return [Offer(name, f"/models/{name}.gguf", name.replace("-", " ").title()) for name in self.sizes]

    def need(self, offer: Offer, room: int) -> MemoryEstimate:
        return MemoryEstimate(n_ctx=8192, weights=self.sizes[offer.name], kv_cache=0, buffers=0, available=room)

    def load(self, offer: Offer, need: MemoryEstimate) -> Started:
        if offer.name in self.broken:
            raise ModelLoadError(LoadProblem.LOAD_FAILED, offer.path, "its tensors are cut short")
        self.loaded.append(offer.name)
        return Started(_served(offer.name), lambda: self.closed.append(offer.name))


def _fleet(loader: Scripted, budget_mib: int, *, window: bool = False, **kw: Any) -> Fleet:
    close = None if window else (lambda: None)
    return Fleet(Resident(_served("main"), 100 * MIB, close=close), loader=loader, budget=budget_mib * MIB, **kw)


async def _claimed(fleet: Fleet, name: str) -> ServedModel:
    """One request's claim, given back as its response ends (what `Claims` does around a request)."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        scope["served"] = await fleet.claim(name)

    scope: dict[str, Any] = {}
    await Claims(app)(scope, None, None)
    return scope["served"]  # type: ignore[no-any-return]


def test_names_are_found_among_loaded_offered_then_aliases() -> None:
    fleet = _fleet(Scripted({"qwen-coder": 10 * MIB}), 1000,
                   aliases=Aliases([Alias("claude-*", "qwen-coder"), Alias("*", "")]))
    assert fleet.resolve(None) == fleet.resolve("") == "main"
    assert fleet.resolve("MAIN") == "main"
    assert fleet.resolve("Qwen Coder") == "qwen-coder"  # the library's title
    assert fleet.resolve("claude-sonnet-4-5") == "qwen-coder"
    assert fleet.resolve("gpt-4o") == "main"  # `*`: the default model
    strict = _fleet(Scripted({}), 1000, aliases=Aliases([Alias("gpt-*", "gone")]))
    with pytest.raises(ApiError) as missing:
        strict.resolve("llama")
    assert missing.value.status == 404 and "GET /v1/models" in missing.value.message
    with pytest.raises(ApiError) as dangling:
        strict.resolve("gpt-5")
    assert dangling.value.status == 404 and "its alias names gone" in dangling.value.message


def test_a_second_model_loads_on_request_and_the_idle_one_makes_room() -> None:
    loader = Scripted({"a": 300 * MIB, "b": 300 * MIB})
    fleet = _fleet(loader, 500)  # main (100) + one of them (300): never both

    async def run() -> None:
        assert (await _claimed(fleet, "a")).name == "a"
        assert (await _claimed(fleet, "a")).name == "a"  # loaded once
        assert (await _claimed(fleet, "b")).name == "b"
        assert loader.loaded == ["a", "b"] and loader.closed == ["a"]
        assert set(fleet.residents) == {"main", "b"}
        listed = {e["id"]: e["status"]["value"] for e in fleet.listing()}
        assert listed == {"main": "loaded", "b": "loaded", "a": "unloaded"}

    asyncio.run(run())


def test_a_busy_model_is_never_unloaded_to_make_room() -> None:
    loader = Scripted({"a": 300 * MIB, "b": 300 * MIB})
    fleet = _fleet(loader, 500)

    async def run() -> None:
        holding = asyncio.Event()
        release = asyncio.Event()

        async def long_answer(scope: Any, receive: Any, send: Any) -> None:
            await fleet.claim("a")
            holding.set()
            await release.wait()  # the stream is still being written

        streaming = asyncio.create_task(Claims(long_answer)({}, None, None))
        await holding.wait()
        with pytest.raises(ApiError) as busy:
            await _claimed(fleet, "b")
        assert busy.value.status == 429 and "a end their answers" in busy.value.message
        assert loader.closed == []
        release.set()
        await streaming
        assert (await _claimed(fleet, "b")).name == "b"  # the answer ended: room now
        assert loader.closed == ["a"]

    asyncio.run(run())


def test_a_model_too_big_for_what_the_kept_ones_leave_is_refused_with_figures() -> None:
    loader = Scripted({"huge": 2048 * MIB})
    fleet = _fleet(loader, 1024, window=True)

    async def run() -> None:
        with pytest.raises(ApiError) as refused:
            await _claimed(fleet, "huge")
        said = refused.value.message
        assert refused.value.status == 400 and refused.value.error_code == "model_too_big"
        assert "needs about 2.0 GiB at 8,192 tokens" in said and "(main) leave 924.0 MiB" in said, said
        assert loader.loaded == [] and set(fleet.residents) == {"main"}

    asyncio.run(run())


def test_the_windows_and_pinned_models_stay_and_idle_ones_are_swept() -> None:
    loader = Scripted({"a": 100 * MIB, "b": 100 * MIB, "c": 100 * MIB})
    fleet = _fleet(loader, 10_000, window=True, idle_s=60)

    async def run() -> None:
        await fleet.load("a", pin=True)
        await _claimed(fleet, "b")
        fleet.residents["b"].used -= 61
        fleet.residents["a"].used -= 61
        assert await fleet.sweep() == ["b"]
        assert set(fleet.residents) == {"main", "a"}
        with pytest.raises(ApiError) as window:
            await fleet.unload("main")
        assert window.value.status == 400 and "the window's model" in window.value.message
        assert await fleet.unload("a") == "a"  # pinned, but asked for by name
        with pytest.raises(ApiError) as absent:
            await fleet.unload("c")
        assert absent.value.status == 400 and "not loaded" in absent.value.message

    asyncio.run(run())


def test_a_failed_load_says_why_and_is_listed_until_one_succeeds() -> None:
    loader = Scripted({"bad": 10 * MIB}, broken=["bad"])
    fleet = _fleet(loader, 1000)

    async def run() -> None:
        with pytest.raises(ApiError) as failed:
            await _claimed(fleet, "bad")
        assert failed.value.status == 400 and "its tensors are cut short" in failed.value.message
        entry = next(e for e in fleet.listing() if e["id"] == "bad")
        assert entry["status"]["failed"] and "cut short" in entry["status"]["reason"]
        loader.broken.clear()
        await _claimed(fleet, "bad")
        assert next(e for e in fleet.listing() if e["id"] == "bad")["status"] == {"value": "loaded"}

    asyncio.run(run())


def test_models_load_and_unload_over_http_as_llama_servers_router_does() -> None:
    from app.server.app import make_app
    from app.server.options import ServeOptions

    loader = Scripted({"a": 10 * MIB})
    app = make_app(_fleet(loader, 1000), ServeOptions())

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            listed = (await http.get("/v1/models")).json()["data"]
            assert [(e["id"], e["status"]["value"]) for e in listed] == [("main", "loaded"), ("a", "unloaded")]
            loaded = await http.post("/models/load", json={"model": "a", "pin": True})
            assert loaded.status_code == 200 and loaded.json()["success"] is True
            status = (await http.get("/harmony-desk/status")).json()
            assert {m["name"]: m["pinned"] for m in status["models"]} == {"main": True, "a": True}
            assert status["aliases"] == ["* → the default model"]
            unloaded = await http.post("/models/unload", json={"model": "a"})
            assert unloaded.json() == {"success": True, "model": "a"} and loader.closed == ["a"]
            refused = await http.post("/models/unload", json={"model": "main"})
            assert refused.status_code == 400 and "default model" in refused.json()["error"]["message"]
            unknown = await http.post("/models/load", json={"model": "a", "what": 1})
            assert unknown.status_code == 400

    asyncio.run(run())
