"""Anthropic's Messages request as the server accepts it (`/v1/messages` and `count_tokens`).

Guarantees: a request is validated before anything runs (`errors.parse`) — `max_tokens` is
required (as in Anthropic's API; not for `count_tokens`), a role other than `user` or
`assistant`, a block of an unknown type, a tool's name other than letters, digits, `_` and `-`
(1 to 64), or a field of a wrong type is a 400 naming the field; blocks and messages are read
leniently otherwise (`cache_control`, `citations`: not ours to apply); `thinking` (enabled or
adaptive, not `display: omitted`) asks for the reasoning back (`thinks`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from app.server.asked import TOOL_NAME


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")  # cache_control, citations: not ours to apply


class TextBlock(_Lenient):
    type: Literal["text"]
    text: str


class ImageBlock(_Lenient):
    type: Literal["image"]
    source: dict[str, Any]


class DocumentBlock(_Lenient):
    type: Literal["document"]


class ToolUseBlock(_Lenient):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Lenient):
    type: Literal["tool_result"]
    tool_use_id: str
    content: (
        str | list[Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]]
    ) = ""
    is_error: bool = False


class ThinkingBlock(_Lenient):
    type: Literal["thinking"]
    thinking: str
    signature: str = ""


class RedactedThinkingBlock(_Lenient):
    type: Literal["redacted_thinking"]
    data: str


Block = Annotated[
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock,
    Field(discriminator="type"),
]


def _form(value: Any) -> str | None:
    """Which form a message's content takes, so an error is said of that form."""
    return "string" if isinstance(value, str) else "list" if isinstance(value, list) else None


class MessageParam(_Lenient):
    role: Literal["user", "assistant"]
    content: Annotated[
        Annotated[str, Tag("string")] | Annotated[list[Block], Tag("list")], Discriminator(_form)
    ]


class ToolParam(_Lenient):
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    input_schema: dict[str, Any] | None = None
    type: str | None = None  # "custom", or a server tool's versioned type (refused)


class Thinking(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["enabled", "adaptive", "disabled"]
    budget_tokens: int | None = Field(None, ge=1)  # the reasoning's budget (gpt-oss, with tools)
    display: Literal["summarized", "omitted"] | None = None


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: dict[str, Any] | None = None  # {"type": "json_schema", "schema": ...}


class CountRequest(BaseModel):
    """`POST /v1/messages/count_tokens`: what the prompt is made of."""

    model_config = ConfigDict(extra="forbid")

    model: str = ""
    messages: list[MessageParam] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: dict[str, Any] | None = None
    thinking: Thinking | None = None
    output_config: OutputConfig | None = None

    @property
    def thinks(self) -> bool:
        """Whether the request asks for the model's reasoning (`thinking` blocks)."""
        t = self.thinking
        return t is not None and t.type != "disabled" and t.display != "omitted"

    @property
    def has_images(self) -> bool:
        """Whether a user's own content has an image block (decoded as it is converted)."""
        return any(
            isinstance(b, ImageBlock)
            for m in self.messages
            if m.role == "user" and isinstance(m.content, list)
            for b in m.content
        )


class MessagesRequest(CountRequest):
    """`POST /v1/messages`."""

    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    metadata: dict[str, Any] | None = None  # accepted, not applied (nor are the next three)
    service_tier: str | None = None
    cache_control: dict[str, Any] | None = None  # the KV cache is reused without being asked
    inference_geo: str | None = None


__all__ = [
    "CountRequest",
    "DocumentBlock",
    "ImageBlock",
    "MessageParam",
    "MessagesRequest",
    "OutputConfig",
    "RedactedThinkingBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolParam",
    "ToolResultBlock",
    "ToolUseBlock",
]
