"""One streamed chat completion of `bench/agent_replay.py`, sent and read the same way to both
servers.

Guarantees: `send` posts one greedy (`temperature` 0, `seed` 1) streamed request of at most
`MAX_TOKENS` tokens with the usage asked for, on a connection of its own, timed by the client;
a failure is kept in the `Reply` (`bench.llama_server`'s `Streamed`), never raised; `fault` says
why a reply does not count: an error, a stream that ended before its finish reason and
`[DONE]`, no usage with prompt and cached tokens, or an empty answer not cut by its length.
"""

from __future__ import annotations

import httpx2 as httpx

from bench.llama_server import Streamed, stream

MAX_TOKENS = 24


Reply = Streamed


def send(client: httpx.Client, base: str, messages: list[dict[str, str]]) -> Reply:
    """One greedy streamed chat completion of `messages` (`bench.llama_server.stream`, at most
    `MAX_TOKENS` tokens); failures are kept, not raised (`fault` reports them)."""
    return stream(client, base, messages, MAX_TOKENS)


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


__all__ = ["MAX_TOKENS", "Reply", "fault", "send"]
