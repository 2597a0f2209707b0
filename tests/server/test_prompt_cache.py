"""The server's prompt cache, with the real `serve` on the bundled SmolLM2 and the `openai` SDK as
its client: four conversations that take turns on one sequence (`--parallel 1`) each get their
prefix back on their second request (restored from the RAM prompt cache, said as
`cached_tokens`); a server stopped and started again between two requests of one conversation
restores it from disk; and states never cross tenants (the worker, directly: another API key's
states are neither restored nor read from disk, its own are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openai

from app import kvcache
from app.domain.placement import LoadSettings
from app.engine.local.client import WorkerClient
from app.engine.protocol import Keep, SnapshotSettings
from app.server.asked import Target
from app.server.options import ServeOptions
from tests.server.test_server import _serve

KEY = bytes(range(32))  # the install's snapshot key (the app reads it from the keyring)

TOPICS = ["lighthouses", "glaciers", "beekeeping", "railways"]


def _system(topic: str) -> str:
    return f"You are a guide who only talks about {topic}. " + " ".join(
        f"Fact {i} about {topic}: it has a long history and many curious details." for i in range(25)
    )


def _first(topic: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": _system(topic)}, {"role": "user", "content": f"Tell me about {topic}."}]


def _ask(client: openai.OpenAI, messages: list[dict[str, str]]) -> Any:
    return client.chat.completions.create(model="default", messages=messages, max_tokens=8,  # type: ignore[arg-type]
                                          temperature=0)  # fmt: skip


def _then(messages: list[dict[str, str]], answer: Any) -> list[dict[str, str]]:
    said = answer.choices[0].message.content or ""
    return [*messages, {"role": "assistant", "content": said}, {"role": "user", "content": "And then?"}]


def _cached(answer: Any) -> int:
    return int(answer.usage.prompt_tokens_details.cached_tokens)


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0)


def test_four_interleaved_conversations_on_one_sequence_get_their_prefix_back(tmp_path: Path, smollm_model: Any) -> None:
    for base in _serve(str(smollm_model), tmp_path, "--parallel", "1", cache=tmp_path / "cache"):
        with _client(base) as client:
            firsts = [(_first(t), _ask(client, _first(t))) for t in TOPICS]
            for messages, first in firsts:
                assert first.usage.prompt_tokens > 300
                second = _ask(client, _then(messages, first))
                assert _cached(second) >= first.usage.prompt_tokens - 1, (first.usage, second.usage)


def test_a_restarted_server_restores_the_conversation_from_disk(tmp_path: Path, smollm_model: Any) -> None:
    cache = tmp_path / "cache"
    messages = _first("glaciers")
    for base in _serve(str(smollm_model), tmp_path, cache=cache):
        with _client(base) as client:
            first = _ask(client, messages)
    [root] = kvcache.key_folders(cache / "kv")  # the server's key's
    assert kvcache.files(root, kvcache.prompt_tag(""))  # written when the server stopped
    for base in _serve(str(smollm_model), tmp_path, cache=cache):
        with _client(base) as client:
            second = _ask(client, _then(messages, first))
    assert _cached(second) >= first.usage.prompt_tokens - 1, (first.usage, second.usage)


def test_a_servers_key_is_its_own_tenant(smollm_model: Any, tmp_path: Path) -> None:
    keyed = Target.of(_Served(), ServeOptions(token="s3cret"))  # type: ignore[arg-type]
    assert keyed.tenant.startswith("key-") and "s3cret" not in keyed.tenant
    assert Target.of(_Served(), ServeOptions()).tenant == ""  # type: ignore[arg-type]

    prompt = [int(t) for t in np.random.default_rng(7).integers(1000, 30000, 300)]
    elsewhere = [int(t) for t in np.random.default_rng(8).integers(1000, 30000, 300)]
    mine = Keep(kvcache.prompt_tag(keyed.tenant), "chatml", keyed.tenant)
    other, third = (Keep(kvcache.prompt_tag(t), "chatml", t) for t in ("key-other", "key-third"))

    def worker() -> WorkerClient:
        client = WorkerClient()
        client.load(smollm_model, n_ctx=2048, n_threads=1, settings=LoadSettings(),
                    snapshots=SnapshotSettings(str(tmp_path), key=KEY))  # fmt: skip
        return client

    client = worker()
    try:
        client.evaluate(prompt, mine)
        client.evaluate(elsewhere, other)  # the live cache holds nothing of the prompt now
        assert client.evaluate([*prompt, 5], other).restored == 0  # another key's: not restored
        client.evaluate(elsewhere, other)
        assert client.evaluate([*prompt, 5], mine).restored == len(prompt)
    finally:
        client.close()  # the prompt cache reaches the disk
    root = kvcache.key_root(tmp_path, KEY)
    assert kvcache.files(root, mine.conversation) and kvcache.files(root, other.conversation)
    client = worker()
    try:
        assert client.evaluate([*prompt, 6], third).restored == 0  # not from anyone else's files
        client.evaluate(elsewhere, third)
        back = client.evaluate([*prompt, 6], mine)
        assert (back.restored, back.source) == (len(prompt), "disk")
    finally:
        client.close()


class _Served:
    """What `Target.of` reads of a served model."""

    template = None
    name = "model"
    sees_images = False
