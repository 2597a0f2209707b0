"""One streamed chat completion of `bench/agent_replay.py`, sent and read the same way to both
servers.

Guarantees: `send` posts one greedy (`temperature` 0, `seed` 1) streamed request of at most
`MAX_TOKENS` tokens with the usage asked for, on a connection of its own, timed by the client;
a failure is kept in the `Reply`, never raised. `take` reads one event-stream line into it (the
content, the finish reason, the usage, llama-server's `timings`, an error chunk); `fault` says
why a reply does not count: an error, a stream that ended before its finish reason and
`[DONE]`, no usage with prompt and cached tokens, or an empty answer not cut by its length.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx

MAX_TOKENS = 24


@dataclass
class Reply:
    """What one streamed chat completion delivered, timed by its client (perf_counter s)."""

    sent: float = 0.0
    first: float = 0.0  # the first content chunk; 0 when none came
    ended: float = 0.0
    text: str = ""
    finish: str | None = None
    done: bool = False  # `data: [DONE]` came
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)  # llama-server's
    error: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return int(self.usage.get("prompt_tokens", -1))

    @property
    def cached_tokens(self) -> int:
        return int((self.usage.get("prompt_tokens_details") or {}).get("cached_tokens", -1))

    @property
    def evaluated(self) -> int:
        return self.prompt_tokens - self.cached_tokens

    @property
    def first_token_s(self) -> float:
        """To the first content chunk; to the end for an answer cut before it said anything."""
        return (self.first or self.ended) - self.sent


def send(client: httpx.Client, base: str, messages: list[dict[str, str]]) -> Reply:
    """One greedy streamed chat completion of `messages`, on a connection of its own (as
    `bench.llama_server.stream`); failures are kept, not raised (`fault` reports them)."""
    body = {
        "model": "m",
        "messages": messages,
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "seed": 1,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    got = Reply(sent=time.perf_counter())
    try:
        with client.stream(
            "POST", f"{base}/v1/chat/completions", json=body, headers={"Connection": "close"}
        ) as response:
            if response.status_code != 200:
                got.error = f"HTTP {response.status_code}: {response.read()[:300]!r}"
            else:
                for line in response.iter_lines():
                    take(got, line)
    except (httpx.HTTPError, ValueError) as exc:  # ValueError: a chunk that is not JSON
        got.error = f"{type(exc).__name__}: {exc}"
    got.ended = time.perf_counter()
    return got


def take(got: Reply, line: str) -> None:
    """One line of the event stream into `got`."""
    if not line.startswith("data: "):
        return
    data = line.removeprefix("data: ")
    if data == "[DONE]":
        got.done = True
        return
    chunk = json.loads(data)
    if "error" in chunk:
        got.error = str(chunk["error"])[:300]
    got.usage = chunk.get("usage") or got.usage
    got.timings |= chunk.get("timings") or {}
    for choice in chunk.get("choices") or []:
        said = (choice.get("delta") or {}).get("content") or ""
        if said:
            got.first = got.first or time.perf_counter()
            got.text += said
        got.finish = choice.get("finish_reason") or got.finish


def fault(got: Reply) -> str | None:
    """Why `got` does not count (see the module docstring), or None."""
    if got.error:
        return f"failed: {got.error}"
    if not got.done or got.finish is None:
        return "the stream ended before its finish reason and [DONE]"
    if got.prompt_tokens < 1 or got.cached_tokens < 0:
        return f"no usage with prompt and cached tokens ({got.usage or 'none'})"
    if not got.text and got.finish != "length":
        return f"an empty answer (finish {got.finish!r})"
    return None


__all__ = ["MAX_TOKENS", "Reply", "fault", "send", "take"]
