"""A reply's figures, said one way everywhere: the answer's footer, the status bar and the
debug pane read them from here, so no two places disagree about the same turn.

Guarantees: every figure comes from the reply's debug record as the engine measured it (the
last generation's timings: decoding speed in tokens per second after the first token, the
first token's latency, prompt and generated tokens, why it stopped, the tokens speculative
decoding drafted and those kept) and the model the reply names; a figure the record does not
hold is None, never a made-up zero; `footer` and `speed` are the sentences shown, `rate` the
speed alone (the debug pane's timeline), `rows` every figure with its name (the debug pane's
list), `drafts` speculative decoding's tokens (the debug pane and the terminal's timing line)
— each written by the same few lines, so a number reads the same wherever it appears.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STOPS = {  # the engine's finish reasons (`FinishReason`), as a reader says them
    "stop": "finished",
    "length": "cut at the token limit",
    "context": "the context is full",
    "cancelled": "stopped",
}


@dataclass(frozen=True)
class Figures:
    """One reply's figures (None: not measured)."""

    model: str = ""
    tokens_per_s: float | None = None
    generated: int | None = None
    prompt_tokens: int | None = None
    first_token_ms: float | None = None
    stop: str = ""  # the engine's finish reason ("stop", "length", …; "" unknown)
    prompt_evaluated: int | None = None  # prompt tokens computed (the rest came from the cache)
    prompt_reused: int | None = None
    total_ms: float | None = None  # the last generation, prompt evaluation included
    restored_disk: int | None = None  # prompt tokens restored from a KV snapshot on disk
    restored_memory: int | None = None  # … from one the worker held in memory
    drafted: int | None = None  # tokens speculative decoding proposed (None: it drafted none)
    accepted: int | None = None  # of those, the tokens the model kept

    @classmethod
    def of(cls, timings: dict[str, Any], stop_reason: str = "", model: str = "") -> Figures:
        """From a debug record's `timings` and `stop_reason` (and the reply's model)."""

        def number(key: str) -> float | None:
            value = timings.get(key)
            return float(value) if isinstance(value, int | float) else None

        def count(key: str) -> int | None:
            value = number(key)
            return int(value) if value is not None else None

        return cls(
            model=model,
            tokens_per_s=number("tokens_per_s"),
            generated=count("generated"),
            prompt_tokens=count("prompt_tokens"),
            first_token_ms=number("first_token_ms"),
            stop=stop_reason,
            prompt_evaluated=count("prompt_evaluated"),
            prompt_reused=count("prompt_reused"),
            total_ms=number("total_ms"),
            restored_disk=count("restored_disk"),
            restored_memory=count("restored_memory"),
            drafted=count("drafted"),
            accepted=count("accepted"),
        )

    def rate(self) -> str:
        """ "42.0 tok/s" (decoding, after the first token); "" when not measured."""
        return f"{self.tokens_per_s:.1f} tok/s" if self.tokens_per_s is not None else ""

    def _first(self) -> str:
        return (
            f"first token {self.first_token_ms:.0f} ms" if self.first_token_ms is not None else ""
        )

    def _generated(self) -> str:
        if self.generated is None:
            return ""
        return "1 token" if self.generated == 1 else f"{self.generated:,} tokens"

    def speed(self) -> str:
        """ "42.0 tok/s · first token 180 ms" (what was measured of it)."""
        return " · ".join(p for p in (self.rate(), self._first()) if p)

    def footer(self) -> str:
        """ "SmolLM2 · 42.0 tok/s · 128 tokens · first token 180 ms · finished"."""
        stop = STOPS.get(self.stop, self.stop)
        parts = (self.model, self.rate(), self._generated(), self._first(), stop)
        return " · ".join(p for p in parts if p)

    def restored(self) -> str:
        """ ", restored from disk: 3,012 tokens" when a snapshot was restored; "" otherwise."""
        for source, count in (("disk", self.restored_disk), ("memory", self.restored_memory)):
            if count:
                return f", restored from {source}: {count:,} tokens"
        return ""

    def drafts(self) -> str:
        """ "12 drafted, 9 accepted" where speculative decoding drafted; "" otherwise."""
        return drafts(self.drafted or 0, self.accepted or 0)

    def rows(self) -> list[tuple[str, str]]:
        """Every measured figure as (name, value), in the footer's words and order."""
        prompt = ""
        if self.prompt_tokens is not None:
            prompt = f"{self.prompt_tokens:,} tokens"
            if self.prompt_evaluated is not None and self.prompt_reused is not None:
                prompt += (
                    f" ({self.prompt_evaluated:,} evaluated, {self.prompt_reused:,} from the cache"
                )
                prompt += f"{self.restored()})"
        rows = [
            ("Model", self.model),
            ("Speed", self.rate()),
            ("Generated", self._generated()),
            ("First token", self._first().removeprefix("first token ")),
            ("Prompt", prompt),
            ("Took", f"{self.total_ms:,.0f} ms" if self.total_ms is not None else ""),
            ("Speculative", self.drafts()),
            ("Stopped", STOPS.get(self.stop, self.stop)),
        ]
        return [(name, value) for name, value in rows if value]


def drafts(drafted: int, accepted: int) -> str:
    """Speculative decoding's tokens, "12 drafted, 9 accepted"; "" when none was drafted."""
    return f"{drafted:,} drafted, {accepted:,} accepted" if drafted > 0 else ""


__all__ = ["STOPS", "Figures", "drafts"]
