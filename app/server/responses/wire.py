"""The Responses API request as the server accepts it, the tools it declares and the calls it
sends back.

Guarantees: validated before anything runs (`errors.parse`): a field the Responses API does not
have is a 400 naming it (`code: "unknown_field"`), as is a value of a wrong type or out of range
(`temperature` 0 to 2, `top_p` above 0 to 1, `max_output_tokens` at least 1, an `include` the
API does not define); input items are read leniently here and checked one by one where they are
converted (`convert`), each error naming the item (`input.I...`); a tool is checked where it
is offered (`tools`): a function's, a custom tool's and a namespace's name letters, digits,
`_` and `-`, 1 to 64 (`FunctionTool`, `CustomTool`, `NamespaceTool`). Every
field the API defines that coding agents send is taken: one that changes nothing here is
honoured as it is (`store`, `metadata`, `client_metadata`, `user`, `safety_identifier`: nothing
is kept or tracked; `prompt_cache_key`, `prompt_cache_retention`: every prompt is cached by its
content anyway; `include: ["reasoning.encrypted_content"]`: reasoning items carry their text in
`content`, which a client sends back as it does the encrypted form; `max_tool_calls`: it counts
calls to built-in tools, and none run here); one not applied is named by `ignored` for the
`X-Harmony-Desk-Warning` header (`reasoning.summary`, `text.verbosity`, `top_logprobs`,
`include` of `message.output_text.logprobs`, a `service_tier` other than auto or default,
`stream_options.include_obfuscation` true); one whose meaning cannot be kept without state this
server does not keep (`previous_response_id`, `conversation`, `prompt`, `background: true`) is
a 400 that says why (`stateless`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.server.asked import TOOL_NAME
from app.server.chat.wire import AS_ASKED_TIERS

NOT_TEXT = ("input_image", "input_file", "input_audio")  # content parts that are no text
HOSTED = (  # the API's tool types besides function, custom and namespace: none runs here
    "file_search",
    "computer",
    "computer_use",
    "computer_use_preview",
    "web_search",
    "web_search_2025_08_26",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "mcp",
    "code_interpreter",
    "programmatic_tool_calling",
    "image_generation",
    "local_shell",
    "shell",
    "tool_search",
    "apply_patch",
)
Includable = Literal[
    "reasoning.encrypted_content",  # reasoning comes back as text in `content`: kept the same
    "message.output_text.logprobs",  # not applied
    "message.input_image.image_url",  # the rest: in items this server never returns
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
]
STATEFUL = {  # fields whose meaning needs what this server does not keep, and why
    "previous_response_id": "this server keeps no responses",
    "conversation": "this server keeps no conversations",
    "prompt": "this server keeps no prompt templates",
    "background": "this server keeps no responses to poll",
}


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_obfuscation: bool | None = None  # padding against length side channels: none here


class ResponsesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = ""
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stream: bool = False
    store: bool | None = None
    metadata: dict[str, Any] | None = None
    user: str | None = None
    truncation: Literal["auto", "disabled"] | None = None  # auto: drop from the middle
    include: list[Includable] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "in-memory", "24h"] | None = None
    client_metadata: dict[str, Any] | None = None
    safety_identifier: str | None = None
    service_tier: str | None = None  # any other than auto or default: not applied
    stream_options: StreamOptions | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    max_tool_calls: int | None = Field(None, ge=1)
    background: bool | None = None  # true: refused (`stateless`)
    previous_response_id: str | None = None  # refused (`stateless`)
    conversation: str | dict[str, Any] | None = None  # refused (`stateless`)
    prompt: dict[str, Any] | None = None  # refused (`stateless`)

    def stateless(self) -> tuple[str, str] | None:
        """The first field given whose meaning needs kept state, and why it is refused."""
        for field, why in STATEFUL.items():
            if getattr(self, field) not in (None, False):
                return field, why
        return None

    def ignored(self) -> list[str]:
        """The fields given that this server does not apply (said in a warning header)."""
        reasoning, text = self.reasoning or {}, self.text or {}
        summary = reasoning.get("summary") or reasoning.get("generate_summary")
        obfuscated = self.stream_options is not None and self.stream_options.include_obfuscation
        unapplied = {
            "reasoning.summary": summary not in (None, "none"),
            "text.verbosity": text.get("verbosity") is not None,
            "top_logprobs": bool(self.top_logprobs),
            'include "message.output_text.logprobs"': "message.output_text.logprobs"
            in (self.include or ()),
            "service_tier": self.service_tier not in (None, *AS_ASKED_TIERS),
            "stream_options.include_obfuscation": bool(obfuscated),
        }
        return [field for field, given in unapplied.items() if given]

    @property
    def effort(self) -> Any:
        """`reasoning.effort` as given (checked where it is converted)."""
        return (self.reasoning or {}).get("effort")

    @property
    def items(self) -> list[dict[str, Any]]:
        """The input as items (a string is one user message)."""
        if isinstance(self.input, str):
            return [{"role": "user", "content": self.input}]
        return self.input

    @property
    def has_images(self) -> bool:
        """Whether a message's content has an image part (decoded as it is converted)."""
        return any(
            isinstance(p, dict) and p.get("type") == "input_image"
            for item in self.items
            if isinstance(item.get("content"), list)
            for p in item["content"]
        )


class FunctionTool(BaseModel):
    """A function tool the request declares."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class CustomFormat(BaseModel):
    """A custom tool's input format: free text, or text a grammar describes."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["text", "grammar"] = "text"
    syntax: Literal["lark", "regex"] | None = None
    definition: str = ""


class CustomTool(BaseModel):
    """A custom (freeform) tool the request declares: it takes one string, not JSON."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["custom"]
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    format: CustomFormat | None = None


class NamespaceTool(BaseModel):
    """A group of function and custom tools under one name (Codex's MCP servers); its tools are
    read one by one where they are offered (`tools`)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["namespace"]
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    tools: list[dict[str, Any]]


class FunctionCallItem(BaseModel):
    """A call the model made, sent back as input."""

    model_config = ConfigDict(extra="ignore")

    call_id: str = ""
    name: str = ""
    arguments: str = "{}"
    namespace: str | None = None  # a namespaced tool's: offered under its flattened name


class CustomCallItem(BaseModel):
    """A call the model made to a custom tool, sent back as input."""

    model_config = ConfigDict(extra="ignore")

    call_id: str = ""
    name: str = ""
    input: str = ""
    namespace: str | None = None


class FunctionOutputItem(BaseModel):
    """A call's result, of a function or a custom tool (`output` is read apart: a string or
    text parts)."""

    model_config = ConfigDict(extra="ignore")

    call_id: str | None = ""


__all__ = [
    "HOSTED",
    "NOT_TEXT",
    "CustomCallItem",
    "CustomFormat",
    "CustomTool",
    "FunctionCallItem",
    "FunctionOutputItem",
    "FunctionTool",
    "NamespaceTool",
    "ResponsesRequest",
]
