"""How many sampling requests and requests for input MCP servers may send: the caps, and the
count against them.

Guarantees: a server gets at most `PER_CALL` requests of a kind in one call and `PER_SERVER`
in its session, and all the servers of one pool together get at most `PER_TURN` in one chat
turn, whatever the host answers with — a person, or nobody in a `--yes` run; a request past
any cap is refused before anyone is asked or any model runs, with a refusal (`OverCap`) that
says which cap (the widest reached: session, then turn, then call), and the person is told
once per cap reached (`told`), not once per request: only that first refusal is audited and
logged, so a flood of requests cannot flood the audit log either.
A "call" is the tool call of that server during which the requests come: the pool starts a new
one at each call (`begin`), and a request between calls counts toward the last one.
A "turn" is one user message and the model's answer to it, its many tool calls included:
`run_turn`, the one turn driver every door goes through, starts a new one (`begin_turns`) on
the caps behind the MCP tools the turn offers (each carries its pool's caps); a request
between turns counts toward the last one, and a turn that offers none of a pool's tools — a
continued answer, an API client's request to the local server — never starts a new turn on
its caps. A server's session is the pool's life with it: `forget` (the server stopped by the
person, or its configuration changed) starts a new one; a server that dies and is restarted
keeps its count. Counts are kept under one lock: requests from several servers, on their own
loops, are counted exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from app.tools.mcp.asks import Refusal

if TYPE_CHECKING:
    from app.tools.api import Tool

Kind = Literal["sampling", "input"]
Scope = Literal["call", "turn", "session"]
PER_CALL: dict[Kind, int] = {"sampling": 10, "input": 5}
PER_TURN: dict[Kind, int] = {"sampling": 20, "input": 10}
PER_SERVER: dict[Kind, int] = {"sampling": 50, "input": 20}
OVER_CAP = -32000  # the JSON-RPC range for a server error: this host's own refusal
_NAMED: dict[Kind, str] = {"sampling": "sampling requests", "input": "requests for input"}
_ALL = ""  # whose count the turn's is: every server's together
Told = Callable[[str, str], None]  # (server, sentence): said to the person


@dataclass(frozen=True)
class OverCap(Refusal):
    """A request past a cap; `first`: the first past it (the one audited and told)."""

    first: bool = False


class Caps:
    """See the module guarantees."""

    def __init__(
        self,
        per_call: dict[Kind, int] | None = None,
        per_server: dict[Kind, int] | None = None,
        told: Told | None = None,
        per_turn: dict[Kind, int] | None = None,
    ) -> None:
        self.per_call = {**PER_CALL, **(per_call or {})}
        self.per_turn = {**PER_TURN, **(per_turn or {})}
        self.per_server = {**PER_SERVER, **(per_server or {})}
        self.told = told
        self._lock = threading.Lock()
        self._counts: dict[Scope, dict[tuple[str, Kind], int]] = {
            "call": {},
            "turn": {},
            "session": {},
        }
        self._said: set[tuple[str, Kind, Scope]] = set()  # caps the person was told of

    def begin(self, server: str) -> None:
        """A call to `server` starts: its per-call counts start again."""
        with self._lock:
            self._restart("call", server)

    def begin_turn(self) -> None:
        """A chat turn starts: the per-turn counts, every server's together, start again."""
        with self._lock:
            self._restart("turn", _ALL)

    def forget(self, server: str) -> None:
        """`server`'s session ends: every count of it starts again (the turn's, shared by
        every server, goes on)."""
        with self._lock:
            self._restart("call", server)
            self._restart("session", server)

    def _restart(self, scope: Scope, who: str) -> None:
        for kind in PER_CALL:
            self._counts[scope].pop((who, kind), None)
            self._said.discard((who, kind, scope))

    def admit(self, server: str, kind: Kind) -> OverCap | None:
        """Count one request of `kind` from `server`: None when it may go on, else its
        refusal (the person told the first time a cap is reached)."""
        with self._lock:
            scope = self._reached(server, kind)
            if scope is None:
                self._count(server, kind)
                return None
            said = (_ALL if scope == "turn" else server, kind, scope)
            first = said not in self._said
            self._said.add(said)
        refusal = self._refusal(server, kind, scope, first)
        if first and self.told is not None:
            self.told(server, refusal.message)
        return refusal

    def _count(self, server: str, kind: Kind) -> None:
        """One more request of `kind`: toward `server`'s call and session, and the turn."""
        counted: tuple[tuple[Scope, str], ...] = (
            ("call", server),
            ("turn", _ALL),
            ("session", server),
        )
        for scope, who in counted:
            counts = self._counts[scope]
            counts[who, kind] = counts.get((who, kind), 0) + 1

    def _reached(self, server: str, kind: Kind) -> Scope | None:
        """The widest cap the next request of `kind` from `server` would pass, if any."""
        widest: tuple[tuple[Scope, str, dict[Kind, int]], ...] = (
            ("session", server, self.per_server),
            ("turn", _ALL, self.per_turn),
            ("call", server, self.per_call),
        )
        for scope, who, cap in widest:
            if self._counts[scope].get((who, kind), 0) >= cap[kind]:
                return scope
        return None

    def _refusal(self, server: str, kind: Kind, scope: Scope, first: bool) -> OverCap:
        what = _NAMED[kind]
        if scope == "session":
            said = (
                f"“{server}” has sent {self.per_server[kind]} {what} since it was started, the"
                f" most this host answers; later ones are refused until it is started again."
            )
        elif scope == "turn":
            said = (
                f"The servers have sent {self.per_turn[kind]} {what} together during this turn,"
                f" the most this host answers in one turn; this one from “{server}” and later"
                " ones are refused until the next turn."
            )
        else:
            said = (
                f"“{server}” has sent {self.per_call[kind]} {what} during one call, the most this"
                " host answers; later ones in this call are refused."
            )
        return OverCap(said, OVER_CAP, first)


def begin_turns(tools: Iterable[Tool]) -> None:
    """A chat turn that offers `tools` starts: each `Caps` behind them (an MCP server's tool
    carries its pool's as its function's `caps`) starts a new turn, once."""
    behind = {id(c): c for t in tools if isinstance(c := getattr(t.function, "caps", None), Caps)}
    for caps in behind.values():
        caps.begin_turn()


__all__ = [
    "OVER_CAP",
    "PER_CALL",
    "PER_SERVER",
    "PER_TURN",
    "Caps",
    "Kind",
    "OverCap",
    "Told",
    "begin_turns",
]
