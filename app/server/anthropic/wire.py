"""Anthropic's Messages request as the server accepts it (`/v1/messages` and `count_tokens`).

Guarantees: a request is validated before anything runs (`errors.parse`) — `max_tokens` is
required (as in Anthropic's API; not for `count_tokens`), a role other than `user`, `assistant`
or `system`, a block of an unknown type, a tool's name other than letters, digits, `_` and `-`
(1 to 64), a field no Anthropic API defines (top level, `thinking`, `tool_choice`,
`output_config`) or a field of a wrong type is a 400 naming the field; blocks, tools and
messages are read leniently otherwise (`cache_control`, `citations`: not ours to apply).
Every field Anthropic's Messages API defines (with its betas a client like Claude Code sends)
is honoured, or accepted and not applied, or refused, each as listed here:

- honoured: `system` and `system` messages (`convert`), `thinking` (`enabled`, `adaptive` and
  `between_tools`: the model's reasoning comes back as `thinking` blocks (`thinks`), unless
  `display: omitted`; `disabled`: it does not; `budget_tokens` caps each reasoning message
  where a grammar holds the turn, as with tools or a format), `tools`
  (`type: custom` or none), `tool_choice` (`auto`, `any`, `tool`, `none`), `output_config`
  (`effort`, `format`), `stop_sequences`, `temperature`, `top_p`, `top_k`, `stream`;
  `cache_control` anywhere (top level, blocks, tools) asks for what the server does unasked:
  a prompt's prefix the KV cache holds is reused;
- accepted and not applied, silently, as they change nothing of the answer: `metadata`
  (`user_id`), `service_tier`, `inference_geo`, `speed: standard`;
- accepted, not applied and said so in the `X-Harmony-Desk-Warning` header (`ignored`), as
  Anthropic would answer otherwise: `context_management` and `compaction` (server-side
  clearing of an old history: the whole history is read here), `container` and
  `diagnostics`, `speed: fast`, `output_config.task_budget` and
  `tool_choice.disable_parallel_tool_use: true` (a model that writes several calls at once
  may still do so);
- refused (`convert`): `mcp_servers` that name a server (this server connects to none) and
  server tools, as the tools the client meant the model to have would silently be missing.
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
    role: Literal["user", "assistant", "system"]  # a system message: text only (`convert`)
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
    type: Literal["enabled", "adaptive", "between_tools", "disabled"]
    budget_tokens: int | None = Field(None, ge=1)  # the reasoning's budget (gpt-oss, with tools)
    display: Literal["summarized", "omitted"] | None = None


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: dict[str, Any] | None = None  # {"type": "json_schema", "schema": ...}
    task_budget: dict[str, Any] | None = None  # a budget across contexts: not applied


class ToolChoiceParam(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None  # the tool a `tool` choice names
    disable_parallel_tool_use: bool = False  # not applied (said so)


_UNAPPLIED = ("context_management", "compaction", "container", "diagnostics")


class CountRequest(BaseModel):
    """`POST /v1/messages/count_tokens`: what the prompt is made of."""

    model_config = ConfigDict(extra="forbid")

    model: str = ""
    messages: list[MessageParam] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: ToolChoiceParam | None = None
    thinking: Thinking | None = None
    output_config: OutputConfig | None = None
    cache_control: dict[str, Any] | None = None  # the KV cache is reused without being asked
    speed: Literal["standard", "fast"] | None = None
    context_management: dict[str, Any] | None = None  # accepted, not applied (said so)
    compaction: dict[str, Any] | None = None  # accepted, not applied (said so)
    mcp_servers: list[dict[str, Any]] | None = None  # refused unless empty (`convert`)

    def ignored(self) -> list[str]:
        """The fields given that this server does not apply and that would change the answer
        (said in a warning header; see the module guarantees)."""
        said = [f for f in _UNAPPLIED if getattr(self, f, None) is not None]
        if self.speed == "fast":
            said.append("speed")
        if self.output_config is not None and self.output_config.task_budget is not None:
            said.append("output_config.task_budget")
        if self.tool_choice is not None and self.tool_choice.disable_parallel_tool_use:
            said.append("tool_choice.disable_parallel_tool_use")
        return said

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
    metadata: dict[str, Any] | None = None  # accepted, not applied (nor are the next two)
    service_tier: str | None = None
    inference_geo: str | None = None
    container: str | dict[str, Any] | None = None  # accepted, not applied (said so)
    diagnostics: dict[str, Any] | None = None  # accepted, not applied (said so)


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
    "ToolChoiceParam",
    "ToolParam",
    "ToolResultBlock",
    "ToolUseBlock",
]
