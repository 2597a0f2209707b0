"""The agents bench's judgement of a session: a turn's requests, whether it completed and why
not, its prompt figures; a session's first error and whether the client worked on a server
(the rules are `bench/agent_clients.py`'s docstring's)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.agent_clients_kit import Ran
from bench.agent_clients_proxy import Exchange

MODEL_PATHS = ("messages", "responses", "chat")  # Exchange.api of a model request


class Failed(Exception):
    """The run did not do what it reports."""


def http_error(x: Exchange) -> bool:
    return x.error is not None and (x.method == "POST" or x.status >= 500)


@dataclass
class Turn:
    """One turn of a session: the client's run and the requests it made."""

    index: int
    ran: Ran
    exchanges: list[Exchange]
    failures: list[str] = field(default_factory=list)  # its HTTP errors, as the turn ended
    cap: int = 0  # the cap on an answer, where a cut answer fails the turn (0: it does not)

    @classmethod
    def ended(cls, index: int, ran: Ran, exchanges: list[Exchange], cap: int = 0) -> Turn:
        """The turn as its client's run ended: a request it left in flight that fails later
        (the server stopped under it) is no error of the turn's."""
        said = [f"{x.method} {x.path}: {x.error}" for x in exchanges if http_error(x)]
        return cls(index, ran, exchanges, said, cap)

    @property
    def cut(self) -> int:
        """Its Responses answers that reached the cap, counted from their usage alike on both
        servers: the one API where llama-server says `completed` for a cut answer (its Messages
        API says `max_tokens`, as ours does, and Claude Code continues such an answer itself)."""
        hidden = [x for x in self.answered if x.api == "responses"]
        return sum((x.output_tokens() or 0) >= self.cap > 0 for x in hidden)

    @property
    def answered(self) -> list[Exchange]:
        return [x for x in self.exchanges if x.api in MODEL_PATHS and x.status == 200]

    @property
    def completed(self) -> bool:
        return self.ran.status == 0 and bool(self.answered) and not self.stopped

    @property
    def stopped(self) -> str | None:
        """Why the client's run did not finish (None when it exited 0 with an answer)."""
        number = f"turn {self.index + 1}"
        if self.ran.status is None:
            return f"{number}: timed out after {self.ran.seconds:.0f} s: {self._tail()}"
        if self.ran.status != 0:
            return f"{number}: exit status {self.ran.status}: {self._tail()}"
        if not self.answered:
            return f"{number}: exited 0 with no model request answered: {self._tail()}"
        if self.cut:
            return f"{number}: {self.cut} answer(s) cut at the cap of {self.cap} tokens"
        return None

    def _tail(self) -> str:
        return " | ".join(self.ran.output.strip().splitlines()[-6:])[-600:] or "(no output)"

    @property
    def prompt(self) -> tuple[int, int]:
        """(prompt tokens in all, evaluated), summed over the turn's answered requests."""
        figures = [p for x in self.answered if (p := x.prompt()) is not None]
        return sum(p[0] for p in figures), sum(p[1] for p in figures)

    def said(self) -> str:
        """The prompt figures as `evaluated/total`, `?` where an answer carried none."""
        total, evaluated = self.prompt
        whole = all(x.prompt() is not None for x in self.answered)
        return f"{evaluated}/{total}" if whole else f"{evaluated}/{total}?"


@dataclass
class Session:
    """One client's turns on one server."""

    client: str
    server: str
    turns: list[Turn] = field(default_factory=list)
    setup_error: str | None = None

    @property
    def first_error(self) -> str | None:
        if self.setup_error:
            return self.setup_error
        for turn in self.turns:
            if turn.failures:
                return f"turn {turn.index + 1}: {turn.failures[0]}"
            if turn.stopped:
                return turn.stopped
        return None

    def works(self, turns: int) -> bool:
        done = len(self.turns) == turns and all(t.completed for t in self.turns)
        return done and not any(t.failures for t in self.turns)

    def probes(self) -> list[str]:
        """GET/HEAD requests refused (listed, not counted as errors)."""
        said = {
            f"{x.method} {x.path} {x.status}"
            for t in self.turns
            for x in t.exchanges
            if x.error and not http_error(x)
        }
        return sorted(said)


__all__ = ["MODEL_PATHS", "Failed", "Session", "Turn", "http_error"]
