"""The chat-completions request as the server accepts it (OpenAI's shape, with a few fields of
llama-server's, Databricks' and our own).

Guarantees: a request body is validated before anything runs (`errors.parse`) — a field the API
does not have is a 400 naming it (`code: "unknown_field"`), a value out of range is a 400 naming
the field; messages are read leniently (clients send back what they received, with fields of
their own). A request's overflow policy is its `overflow` field (stop, drop-middle, rolling),
else Databricks' `error_behavior` ("truncate" is drop-middle: the instructions, the tools and
the first exchange stay, as OpenAI's `truncation: "auto"` drops from the middle), else stop.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.budget import Overflow, OverflowName
from app.server.asked import TOOL_NAME, Effort
from app.server.options import ReasoningField
from app.server.sampled import Sampled


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


class ChatRequest(Sampled):
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1, le=MAX_CHOICES, description="choices, decoded side by side")
    tools: list[ToolSpec] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: Effort | None = None
    reasoning_format: ReasoningField | None = None  # ours: where the reasoning is returned
    thinking_budget: int | None = Field(None, ge=1)  # ours: tokens per reasoning message (gpt-oss)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    overflow: OverflowName | None = None  # ours: what a prompt that outgrows the context does
    error_behavior: Literal["error", "truncate"] | None = None  # Databricks' word for it

    @property
    def has_images(self) -> bool:
        return any(m.images for m in self.messages)

    @property
    def policy(self) -> Overflow:
        """The overflow policy asked for: `overflow` when given, else Databricks'
        `error_behavior` ("truncate": drop the middle, "error": stop), else stop."""
        if self.overflow is not None:
            return Overflow(self.overflow)
        return Overflow.DROP_MIDDLE if self.error_behavior == "truncate" else Overflow.STOP


__all__ = ["ChatMessage", "ChatRequest", "ToolSpec"]
