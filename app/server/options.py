"""How the server is run: the options `serve` and the window's server both give it.

Guarantees: one frozen value, read by the guard (addresses, token, origins, body size and
deadlines), by `listen` (connection deadlines and limit) and by the APIs (the most tokens an
answer may ask for, where the reasoning goes, gpt-oss's thinking budget under a constraint,
whether a prompt past the threshold is compacted when its request names no overflow policy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ReasoningField = Literal["reasoning_content", "reasoning"]  # where a chat answer's reasoning goes
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None  # required as a bearer token when set
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # names besides this machine's the Host may carry
    max_body: int = 8 * 1024 * 1024
    max_tokens: int = 4096  # a request may not ask for more
    reasoning_field: ReasoningField = "reasoning_content"
    thinking_budget: int | None = None  # gpt-oss under a constraint: tokens per reasoning message
    head_timeout_s: float = 10.0  # a connection's request line and headers must come by then
    body_timeout_s: float = 30.0  # a request's body must come by then (408)
    idle_timeout_s: int = 5  # a kept-alive connection with no new request is closed
    max_connections: int = 64  # requests in flight at once; past it a request is answered 503
    compact: bool = False  # summarise a prompt past 80 % of the context (unless a request says)


__all__ = ["LOOPBACK", "ReasoningField", "ServeOptions"]
