"""A reply's figures, said one way everywhere: the answer's footer, the status bar and the
debug pane read them from here, so no two places disagree about the same turn.

Guarantees: every figure comes from the reply's debug record as the engine measured it (the
last generation's timings: decoding speed in tokens per second after the first token, the
first token's latency, prompt and generated tokens, why it stopped) and the model the reply
names; a figure the record does not hold is None, never a made-up zero; `footer` and `speed`
are the sentences shown.
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

    @classmethod
    def of(cls, timings: dict[str, Any], stop_reason: str = "", model: str = "") -> Figures:
        """From a debug record's `timings` and `stop_reason` (and the reply's model)."""

        def number(key: str) -> float | None:
            value = timings.get(key)
            return float(value) if isinstance(value, int | float) else None

        generated, prompt = number("generated"), number("prompt_tokens")
        return cls(
            model=model,
            tokens_per_s=number("tokens_per_s"),
            generated=int(generated) if generated is not None else None,
            prompt_tokens=int(prompt) if prompt is not None else None,
            first_token_ms=number("first_token_ms"),
            stop=stop_reason,
        )

    def speed(self) -> str:
        """ "42.0 tok/s · first token 180 ms" (what was measured of it)."""
        parts = []
        if self.tokens_per_s is not None:
            parts.append(f"{self.tokens_per_s:.1f} tok/s")
        if self.first_token_ms is not None:
            parts.append(f"first token {self.first_token_ms:.0f} ms")
        return " · ".join(parts)

    def footer(self) -> str:
        """ "SmolLM2 · 42.0 tok/s · 128 tokens · first token 180 ms · finished"."""
        parts = [self.model] if self.model else []
        if self.tokens_per_s is not None:
            parts.append(f"{self.tokens_per_s:.1f} tok/s")
        if self.generated is not None:
            parts.append("1 token" if self.generated == 1 else f"{self.generated:,} tokens")
        if self.first_token_ms is not None:
            parts.append(f"first token {self.first_token_ms:.0f} ms")
        if self.stop:
            parts.append(STOPS.get(self.stop, self.stop))
        return " · ".join(parts)


__all__ = ["STOPS", "Figures"]
