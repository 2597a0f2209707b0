"""The context budget: how a prompt spends the model's context, and what to do when it outgrows it.

Guarantees: a `Budget` splits the context (`n_ctx` tokens) into the parts a prompt is made of —
instructions (the system and developer text, the template's own wrapping included), tools (their
declaration), documents (attached document text), history (every other message) — plus the
answer's reserve (`reserve_for`: the answer's `max_tokens`, at most half the context) and the
room left; it is nearly full from `NEARLY_FULL` (85 %) of the context used or reserved, and says
itself in one sentence (`sentence`), the terminal's line and the window's tooltip alike. An
`Overflow` is a conversation's policy once its prompt and the reserve no longer fit: stop and say
so (the default), drop the middle (keep the instructions, the tools and the first exchange; drop
the oldest exchanges after it), or a rolling window (keep the instructions and the tools; drop the
oldest exchanges). A tool result or document larger than its share (`CUT_SHARE`: half the room
the conversation has besides its instructions, tools and reserve) is cut with a visible marker
(`marker`), and what a policy changed is said in one notice (`notice`), never silently. Pure:
no I/O, no tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Literal

NEARLY_FULL = 0.85  # the share of the context (used + the answer's reserve) that warns
RESERVE_SHARE = 0.5  # the answer's reserve is at most this share of the context
CUT_SHARE = 0.5  # one tool result or document may take at most this share of the room

# the settings' and the server's words
OverflowName = Literal["stop", "drop-middle", "rolling", "summarise"]


class Overflow(StrEnum):
    """What a conversation does once its prompt and the answer's reserve outgrow the context."""

    STOP = "stop"  # stop with a clear message; nothing is left out
    DROP_MIDDLE = "drop-middle"  # keep instructions, tools and the first exchange
    ROLLING = "rolling"  # keep instructions and tools; the oldest exchanges go first
    SUMMARISE = "summarise"  # past a threshold, the older exchanges stand as a summary

    @property
    def said(self) -> str:
        """The policy as a menu or a help line says it."""
        return _SAID[self]


_SAID = {
    Overflow.STOP: "Stop and say so",
    Overflow.DROP_MIDDLE: "Drop the middle (keep the instructions and the first exchange)",
    Overflow.ROLLING: "Rolling window (drop the oldest exchanges)",
    Overflow.SUMMARISE: "Summarise (the older exchanges become a summary you can undo)",
}


_FULL = {
    Overflow.STOP: "the chat stops (overflow: stop)",
    Overflow.DROP_MIDDLE: "older exchanges are left out (overflow: drop-middle)",
    Overflow.ROLLING: "the oldest exchanges are left out (overflow: rolling)",
    Overflow.SUMMARISE: "the older exchanges are summarised (overflow: summarise)",
}


def reserve_for(max_tokens: int, n_ctx: int) -> int:
    """The tokens held back for the answer: its `max_tokens`, at most half the context."""
    return max(0, min(max_tokens, int(n_ctx * RESERVE_SHARE)))


@dataclass(frozen=True)
class Budget:
    """How one prompt spends the context (tokens; `estimated`: counted at four characters a
    token, for a tokenizer the app does not hold)."""

    n_ctx: int
    instructions: int = 0
    tools: int = 0
    documents: int = 0
    history: int = 0
    reserve: int = 0  # held for the answer
    estimated: bool = False

    @property
    def used(self) -> int:
        """The prompt's tokens."""
        return self.instructions + self.tools + self.documents + self.history

    @property
    def left(self) -> int:
        """The room after the prompt and the answer's reserve (negative: over by that much)."""
        return self.n_ctx - self.used - self.reserve

    @property
    def fits(self) -> bool:
        return self.left >= 0

    @property
    def nearly_full(self) -> bool:
        return self.n_ctx > 0 and (self.used + self.reserve) >= NEARLY_FULL * self.n_ctx

    @property
    def room(self) -> int:
        """The tokens the conversation's documents, tool results and history may take."""
        return max(0, self.n_ctx - self.reserve - self.instructions - self.tools)

    @property
    def share(self) -> int:
        """The most one tool result or document may take (`CUT_SHARE` of the room)."""
        return int(self.room * CUT_SHARE)

    def parts(self) -> tuple[tuple[str, int], ...]:
        """(name, tokens) of each part, in the bar's order, the room left last."""
        return (
            ("instructions", self.instructions),
            ("tools", self.tools),
            ("documents", self.documents),
            ("history", self.history),
            ("answer", self.reserve),
            ("left", max(0, self.left)),
        )

    def grown(self, generated: int) -> Budget:
        """The budget once the answer's `generated` tokens joined the history."""
        return replace(self, history=self.history + max(0, generated))

    def headline(self) -> str:
        """ "context 385/4,096" ("about" for an estimate)."""
        about = "about " if self.estimated else ""
        return f"context {about}{self.used:,}/{self.n_ctx:,}"

    def sentence(self, policy: Overflow | None = None) -> str:
        """The budget in one sentence (the terminal's line, the window's tooltip); with the
        conversation's `policy`, what happens once it is full."""
        parts = " · ".join(f"{name} {n:,}" for name, n in self.parts()[:4])
        state = f"{self.left:,} left" if self.fits else f"over by {-self.left:,}"
        return f"{self.headline()}: {parts}; answer reserve {self.reserve:,}, {state}" + (
            self.warning(policy)
        )

    def warning(self, policy: Overflow | None = None) -> str:
        """ " — nearly full", " — full: …" as the policy goes on, or "" (room enough)."""
        if not self.nearly_full:
            return ""
        if policy is None:
            return " — nearly full" if self.fits else " — full"
        what = _FULL[policy]
        return f" — nearly full: then {what}" if self.fits else f" — full: {what}"

    def to_dict(self) -> dict[str, int]:
        """The plain form a debug record keeps (`from_dict` reads it back)."""
        out = dict(self.parts()[:4])
        out |= {"n_ctx": self.n_ctx, "reserve": self.reserve, "estimated": int(self.estimated)}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> Budget | None:
        """A budget from `to_dict`'s form; None when `data` holds none."""
        if not data.get("n_ctx"):
            return None
        return cls(
            n_ctx=int(data["n_ctx"]),
            instructions=int(data.get("instructions", 0)),
            tools=int(data.get("tools", 0)),
            documents=int(data.get("documents", 0)),
            history=int(data.get("history", 0)),
            reserve=int(data.get("reserve", 0)),
            estimated=bool(data.get("estimated", 0)),
        )


@dataclass(frozen=True)
class Cut:
    """One tool result or document cut to its share: what it was, and its tokens before and
    after."""

    what: str  # "the result of get_weather", "the attached documents"
    kept: int
    total: int


def marker(cut: int, total: int) -> str:
    """The visible marker where a tool result or document was cut."""
    return f"\n[… cut: {cut:,} tokens of {total:,} did not fit the context …]"


def notice(policy: Overflow, exchanges: int, dropped: int, cuts: tuple[Cut, ...]) -> str:
    """What a policy changed to fit the context, in one notice ("" when nothing)."""
    said = []
    if dropped:
        where = "oldest first" if policy is Overflow.ROLLING else "from the middle"
        plural = "s" if exchanges != 1 else ""
        said.append(
            f"{exchanges} earlier exchange{plural} ({dropped} messages) left out of the prompt"
            f" to fit the context ({where}; the transcript keeps them)"
        )
    for cut in cuts:
        said.append(f"{cut.what} cut to {cut.kept:,} of {cut.total:,} tokens")
    return ("Context: " + "; ".join(said) + ".") if said else ""


__all__ = [
    "CUT_SHARE",
    "NEARLY_FULL",
    "RESERVE_SHARE",
    "Budget",
    "Cut",
    "Overflow",
    "OverflowName",
    "marker",
    "notice",
    "reserve_for",
]
