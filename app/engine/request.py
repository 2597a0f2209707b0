"""One generation's knobs as one frozen value: what every door (the window, the terminal chat,
each HTTP API) asks of a session, built and checked once where the request comes in and handed
down unchanged to `Session.generate`.

Guarantees: a `GenerationRequest` that exists is valid — a `tool_choice` that names a tool
names one of the declared tools or built-in calls (`RequestError` otherwise, saying which
there are: the only place this is checked), `max_tokens` is at least 1 and `top_logprobs`
between 0 and 20. Nothing in it is read by the door again once it is built; a session takes it
as it is (its own defaults stand where a field is None). `tools` None means "the functions the
conversation's developer message declares" (the window's and the terminal's tool turns); a
mapping means exactly those functions (an API client's declared tools).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.constrain.constraint import CallSpec, ResponseFormat, ToolChoice
from app.domain.budget import Overflow
from app.domain.compaction import Compaction
from app.domain.messages import ReasoningEffort
from app.domain.sampling import Sampling
from app.errors import RequestError

MAX_TOP_LOGPROBS = 20  # alternatives a scored token may carry (OpenAI's bound)

Parameters = Mapping[str, Any] | None  # a function's JSON-schema parameters (None: any object)


@dataclass(frozen=True)
class SamplingAsk:
    """What one request changes of the model's sampling (None: the model's own value)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None

    def over(self, base: Sampling | None) -> Sampling | None:
        """`base` with this request's values in place (None, a remote server's own sampling,
        stays None when nothing is asked)."""
        asked = {k: v for k, v in vars(self).items() if v is not None}
        if not asked:
            return base
        return (base or Sampling()).model_copy(update=asked)


@dataclass(frozen=True)
class GenerationRequest:
    """Everything one generation is asked with (see the module guarantees)."""

    max_tokens: int | None = None  # the answer's budget (None: the session's default)
    tool_choice: ToolChoice = "auto"
    tools: Mapping[str, Parameters] | None = None  # declared functions (None: the conversation's)
    calls: tuple[CallSpec, ...] = ()  # built-in tools the grammar allows besides the functions
    response_format: ResponseFormat | None = None  # JSON mode
    effort: ReasoningEffort | None = None  # recorded on the conversation as its format says
    overflow: Overflow = Overflow.STOP  # what a prompt that outgrows the context does
    keep: str = ""  # the history's conversation whose KV state is kept ("": the prompt cache's)
    tenant: str = ""  # whose cached prompts it may reuse ("": the desktop's user; a server's key)
    sampling: SamplingAsk = field(default_factory=SamplingAsk)
    stops: tuple[str, ...] = ()  # text that ends the answer (cut by the reply's reader)
    top_logprobs: int = 0  # > 0: each token comes scored with this many alternatives
    thinking_budget: int | None = None  # reasoning tokens a message (None: the session's)
    prefix: tuple[int, ...] = ()  # continue a cut answer from the ids it had produced
    reserved: bool = False  # the window's own turn: never queued behind the server's clients
    compaction: Compaction | None = None  # summarise: the conversation's latest compaction
    compact_at: float = 0.8  # summarise: the share of the context whose passing compacts
    keep_recent: float = 0.4  # summarise: the share of the room kept verbatim
    compact_now: bool = False  # compact before answering, whatever the prompt's size
    compact_ahead: bool = False  # summarise: after the answer, compact for the next turn

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 1:
            raise RequestError(
                f"max_tokens must be at least 1, not {self.max_tokens}", "max_tokens"
            )
        if not 0 <= self.top_logprobs <= MAX_TOP_LOGPROBS:
            said = f"top_logprobs must be between 0 and {MAX_TOP_LOGPROBS}, not {self.top_logprobs}"
            raise RequestError(said, "top_logprobs")
        if not (0 < self.compact_at <= 1 and 0 <= self.keep_recent < 1):
            said = "compact_at must be in (0, 1] and keep_recent in [0, 1)"
            raise RequestError(said, "compact_at")
        if self.tools is not None and self.names_a_tool and self.tool_choice not in self.offered:
            said = f"tool_choice names {self.tool_choice!r}, which is not among the tools"
            raise RequestError(f"{said}: {sorted(self.offered)}", "tool_choice")

    @property
    def names_a_tool(self) -> bool:
        """The choice forces a call to one named tool."""
        return self.tool_choice not in ("auto", "none", "required")

    @property
    def offered(self) -> set[str]:
        """The names a call may be made to: the declared functions and the built-in calls."""
        names = set(self.tools or {})
        return names | {c.recipient.removeprefix("functions.") for c in self.calls}

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON answer's schema (None: the answer is free)."""
        return self.response_format.json_schema_dict if self.response_format else None

    @property
    def constrained(self) -> bool:
        """A grammar holds the output: a JSON answer, or calls to declared tools."""
        return self.schema is not None or bool(self.tools) or bool(self.calls)


__all__ = ["MAX_TOP_LOGPROBS", "GenerationRequest", "Parameters", "SamplingAsk"]
