"""Streams kept alive while the model reads: a beat after each quiet interval, before the first
token as between tokens, that each API's own SDK skips (the `anthropic` and `openai` SDKs as
clients of a real server on loopback, over a scripted source paced slower than the beat), and a
kept-alive stream whose client leaves closes the stream under it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import anthropic
import httpx2 as httpx
import openai
import pytest

from app.engine.local.scripted import ScriptedClient
from app.server import keepalive
from app.server.keepalive import COMMENT, kept_alive
from app.server.options import ServeOptions
from tests.server.in_process import scripted_server
from tests.server.test_server import _free_port

ANSWER = "<|channel|>final<|message|>Kept alive.<|return|>"
PACE = 0.3  # seconds before each token: several beats before the first
BEAT = 0.05


async def _paced(items: list[bytes], pause: float, closed: list[str]) -> AsyncIterator[bytes]:
    try:
        for item in items:
            await asyncio.sleep(pause)
            yield item
    finally:
        closed.append("closed")


async def _all(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in stream]


def test_a_quiet_stream_gets_beats_and_its_own_bytes_unchanged_in_order() -> None:
    closed: list[str] = []
    out = asyncio.run(_all(kept_alive(_paced([b"a", b"b"], 0.25, closed), b".", every=0.1)))
    assert [c for c in out if c != b"."] == [b"a", b"b"]
    assert out.index(b"a") >= 2 and out[-1] == b"b"  # beats before the first, none after the last
    assert closed == ["closed"]


def test_a_stream_that_is_never_quiet_gets_no_beat() -> None:
    out = asyncio.run(_all(kept_alive(_paced([b"a", b"b", b"c"], 0.0, []), b".", every=5.0)))
    assert out == [b"a", b"b", b"c"]


def test_a_client_that_leaves_mid_wait_closes_the_stream_under_it() -> None:
    closed: list[str] = []

    async def leave() -> list[bytes]:
        kept = kept_alive(_paced([b"a", b"b"], 10.0, closed), b".", every=0.05)
        got = [await anext(kept), await anext(kept)]  # two beats; the read of "a" is under way
        await kept.aclose()  # what the server does when the client is gone
        return got

    assert asyncio.run(asyncio.wait_for(leave(), 5)) == [b".", b"."]
    assert closed == ["closed"]


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(keepalive, "BEAT_SECONDS", BEAT)
        client = ScriptedClient([ANSWER] * 12, delay_s=PACE)
        with scripted_server(client, ServeOptions(port=_free_port(), max_tokens=64)) as base:
            yield base


def _raw(base: str, path: str, body: dict[str, object]) -> str:
    headers = {"anthropic-version": "2023-06-01"}
    with httpx.stream("POST", f"{base}{path}", json={**body, "stream": True}, headers=headers, timeout=60) as r:
        assert r.status_code == 200
        return "".join(r.iter_text())


def test_an_anthropic_stream_pings_while_quiet_and_the_sdk_reads_the_answer(served: str) -> None:
    body = {"model": "scripted", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
    raw = _raw(served, "/v1/messages", body)
    events = [line[len("event: "):] for line in raw.splitlines() if line.startswith("event: ")]
    first_block = events.index("content_block_start")
    assert events[0] == "message_start" and events[1:first_block].count("ping") >= 3
    assert events[-1] == "message_stop"
    client = anthropic.Anthropic(base_url=served, api_key="none", max_retries=0)
    with client.messages.stream(model="scripted", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]) as s:
        final = s.get_final_message()
    assert [b.text for b in final.content if b.type == "text"] == ["Kept alive."]


def test_openai_streams_carry_comments_while_quiet_and_the_sdk_reads_the_answer(served: str) -> None:
    chat = {"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]}
    raw = _raw(served, "/v1/chat/completions", chat)
    assert raw.count(COMMENT.decode()) >= 3 and raw.rstrip().endswith("data: [DONE]")
    client = openai.OpenAI(base_url=f"{served}/v1", api_key="none", max_retries=0)
    said = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "Hi"}], stream=True) if c.choices)
    assert said == "Kept alive."
    raw = _raw(served, "/v1/responses", {"model": "scripted", "input": "Hi"})
    assert raw.count(COMMENT.decode()) >= 3
    with client.responses.stream(model="scripted", input="Hi") as s:
        assert s.get_final_response().output_text == "Kept alive."
