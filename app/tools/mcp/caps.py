"""How many sampling requests and requests for input one MCP server may send: the caps, and
the count against them.

Guarantees: a server gets at most `PER_CALL` requests of a kind in one call and `PER_SERVER`
in its session, whatever the host answers with — a person, or nobody in a `--yes` run; a
request past either cap is refused before anyone is asked or any model runs, with a refusal
(`OverCap`) that says which cap, and the person is told once per cap reached (`told`), not
once per request: only that first refusal is audited and logged, so a flood of requests
cannot flood the audit log either. A "call" is the tool call of that server during which the
requests come: the pool starts a new one at each call (`begin`), and a request between calls
counts toward the last one — the tool host has no other notion of a turn, and a model's many
calls in one turn are bounded by the session's cap. A server's session is the pool's life
with it: `forget` (the server stopped by the person, or its configuration changed) starts a
new one; a server that dies and is restarted keeps its count. Counts are kept under one lock:
requests from several servers, on their own loops, are counted exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.tools.mcp.asks import Refusal

Kind = Literal["sampling", "input"]
PER_CALL: dict[Kind, int] = {"sampling": 10, "input": 5}
PER_SERVER: dict[Kind, int] = {"sampling": 50, "input": 20}
OVER_CAP = -32000  # the JSON-RPC range for a server error: this host's own refusal
_NAMED: dict[Kind, str] = {"sampling": "sampling requests", "input": "requests for input"}
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
    ) -> None:
        self.per_call = {**PER_CALL, **(per_call or {})}
        self.per_server = {**PER_SERVER, **(per_server or {})}
        self.told = told
        self._lock = threading.Lock()
        self._call: dict[tuple[str, Kind], int] = {}
        self._session: dict[tuple[str, Kind], int] = {}
        self._said: set[tuple[str, Kind, str]] = set()  # caps the person was told of

    def begin(self, server: str) -> None:
        """A call to `server` starts: its per-call counts start again."""
        with self._lock:
            for kind in PER_CALL:
                self._call.pop((server, kind), None)
                self._said.discard((server, kind, "call"))

    def forget(self, server: str) -> None:
        """`server`'s session ends: every count of it starts again."""
        with self._lock:
            for kind in PER_CALL:
                self._call.pop((server, kind), None)
                self._session.pop((server, kind), None)
                self._said -= {(server, kind, "call"), (server, kind, "session")}

    def admit(self, server: str, kind: Kind) -> OverCap | None:
        """Count one request of `kind` from `server`: None when it may go on, else its
        refusal (the person told the first time a cap is reached)."""
        key = (server, kind)
        with self._lock:
            calls, session = self._call.get(key, 0), self._session.get(key, 0)
            scope = "call" if calls >= self.per_call[kind] else ""
            scope = "session" if session >= self.per_server[kind] else scope
            if not scope:
                self._call[key], self._session[key] = calls + 1, session + 1
                return None
            first = (server, kind, scope) not in self._said
            self._said.add((server, kind, scope))
        refusal = self._refusal(server, kind, scope, first)
        if first and self.told is not None:
            self.told(server, refusal.message)
        return refusal

    def _refusal(self, server: str, kind: Kind, scope: str, first: bool) -> OverCap:
        what = _NAMED[kind]
        if scope == "session":
            said = (
                f"“{server}” has sent {self.per_server[kind]} {what} since it was started, the"
                f" most this host answers; later ones are refused until it is started again."
            )
        else:
            said = (
                f"“{server}” has sent {self.per_call[kind]} {what} during one call, the most this"
                " host answers; later ones in this call are refused."
            )
        return OverCap(said, OVER_CAP, first)


__all__ = ["OVER_CAP", "PER_CALL", "PER_SERVER", "Caps", "Kind", "OverCap", "Told"]
