"""The chat-completions request as the server accepts it (OpenAI's shape, with a few fields of
llama-server's, Databricks' and our own).

Guarantees: a request body is validated before anything runs (`errors.parse`) — a field the API
does not have is a 400 naming it (`code: "unknown_field"`), a value out of range is a 400 naming
the field; messages are read leniently (clients send back what they received, with fields of
their own). A request's overflow policy is its `overflow` field (stop, drop-middle, rolling),
else Databricks' `error_behavior` ("truncate" is drop-middle: the instructions, the tools and
the first exchange stay, as OpenAI's `truncation: "auto"` drops from the middle), else stop
(else summarise, on a server started with `--compact`).
Every field OpenAI's chat API defines that coding agents send is taken: one that changes
nothing here is honoured as it is (`store`, `metadata`, `user`, `safety_identifier`: nothing is
kept or tracked; `prompt_cache_key`, `prompt_cache_retention`: every prompt is cached by its
content anyway; `modalities: ["text"]`); one not applied is said in the
`X-Harmony-Desk-Warning` header (`ignored`: `verbosity`, `prediction`, `web_search_options`, a
`service_tier` other than auto or default, `stream_options.include_obfuscation` true, with the
penalties of `Sampled`); audio out is refused (`modalities` with "audio", `audio`), never
answered as text silently.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.budget import Overflow, OverflowName
from app.server.asked import TOOL_NAME
from app.server.chat.effort import OpenAIEffort
from app.server.options import ReasoningField
from app.server.sampled import Sampled, StreamOptions


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(_Lenient):
    name: str
    arguments: str = "{}"


class ToolCall(_Lenient):
    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None

    @property
    def parts(self) -> list[dict[str, Any]]:
        """The content's parts (none when it is a string)."""
        return self.content if isinstance(self.content, list) else []

    @property
    def images(self) -> int:
        """How many image parts the content has."""
        return sum(1 for p in self.parts if p.get("type") == "image_url")

    @property
    def text(self) -> str:
        """The text of the content (text parts joined; images are read apart, other parts are
        refused earlier)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.parts)


class FunctionSpec(_Lenient):
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolSpec(_Lenient):
    type: Literal["function"] = "function"
    function: FunctionSpec


MAX_CHOICES = 8  # a chat request's `n` at most
AS_ASKED_TIERS = ("auto", "default")  # the tiers every answer here is served at


class ChatStreamOptions(StreamOptions):
    include_obfuscation: bool | None = None  # padding against length side channels: none here


class ChatRequest(Sampled):
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1, le=MAX_CHOICES, description="choices, decoded side by side")
    tools: list[ToolSpec] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    reasoning_format: ReasoningField | None = None  # ours: where the reasoning is returned
    thinking_budget: int | None = Field(None, ge=1)  # ours: tokens per reasoning message (gpt-oss)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    overflow: OverflowName | None = None  # ours: what a prompt that outgrows the context does
    error_behavior: Literal["error", "truncate"] | None = None  # Databricks' word for it
    stream_options: ChatStreamOptions | None = None
    reasoning_effort: OpenAIEffort | None = None  # the nearest effort the template takes
    verbosity: Literal["low", "medium", "high"] | None = None
    service_tier: str | None = None  # any other than auto or default: not applied
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "in-memory", "24h"] | None = None
    safety_identifier: str | None = None
    prediction: dict[str, Any] | None = None
    modalities: list[Literal["text", "audio"]] | None = None
    audio: dict[str, Any] | None = None
    web_search_options: dict[str, Any] | None = None

    def ignored(self) -> list[str]:
        """The fields given that this server does not apply (said in a warning header)."""
        tier = self.service_tier not in (None, *AS_ASKED_TIERS)
        obfuscated = self.stream_options is not None and self.stream_options.include_obfuscation
        unapplied = {
            "verbosity": self.verbosity is not None,
            "prediction": self.prediction is not None,
            "web_search_options": self.web_search_options is not None,
            "service_tier": tier,
            "stream_options.include_obfuscation": bool(obfuscated),
        }
        return [*super().ignored(), *(field for field, given in unapplied.items() if given)]

    @property
    def has_images(self) -> bool:
        return any(m.images for m in self.messages)

    @property
    def asks_policy(self) -> bool:
        """Whether the request names an overflow policy (`overflow` or `error_behavior`)."""
        return self.overflow is not None or self.error_behavior is not None

    @property
    def policy(self) -> Overflow:
        """The overflow policy asked for: `overflow` when given, else Databricks'
        `error_behavior` ("truncate": drop the middle, "error": stop), else stop."""
        if self.overflow is not None:
            return Overflow(self.overflow)
        return Overflow.DROP_MIDDLE if self.error_behavior == "truncate" else Overflow.STOP


__all__ = ["ChatMessage", "ChatRequest", "ChatStreamOptions", "ToolSpec"]
