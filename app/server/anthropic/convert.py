"""An Anthropic Messages request read as the chat-completions request that asks the same.

Guarantees: the request is validated before anything runs — `max_tokens` is required (as in
Anthropic's API; not for `count_tokens`), a role other than `user` or `assistant`, a block of an
unknown type or a field of a wrong type is a 400 naming the field; `system` (a string or text
blocks) becomes the system message; text blocks are joined; an assistant's `tool_use` blocks
become its tool calls (their `input` as the arguments' JSON) and its `thinking` blocks its
reasoning (which `convert` keeps only before calls); a user's `tool_result` blocks become tool
messages paired by `tool_use_id`, before the user's own text; `tools` (`input_schema`) and
`tool_choice` (auto, any, tool, none), `output_config` (effort, a JSON schema) become their chat
fields, so the one converter (`app/server/convert.py`) makes the conversation and holds the model
to them. A user's `image` blocks with a `base64` source become `image_url` parts (a `data:` URL
of that media type) in their place among its text, checked where chat's are, an error naming
the block; an image to a model that reads text only, one by `url` (this server never fetches
one) or by `file` id, an image anywhere but a user's own content (a tool result, an assistant
message, the system prompt), document blocks, server tools and a final assistant message (a
prefill) are refused with a 400 that says so, never dropped silently; `thinking` (enabled or
adaptive, not `display: omitted`) asks for the reasoning back, its `budget_tokens` the
reasoning's budget.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from app.server.pictures import no_files, not_fetched, text_only
from app.server.wire import ApiError


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
    name: str
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


def _refused(block: ImageBlock | DocumentBlock, param: str) -> ApiError:
    """The 400 for an image where images are not taken, or a document."""
    said = (
        "image blocks are not supported here: images are taken in a user message's own content"
        if isinstance(block, ImageBlock)
        else "document blocks are not supported: this server reads text and images"
    )
    return ApiError(400, said, param=param, code="unsupported_content")


def _text(blocks: list[Any], param: str) -> str:
    """The text of `blocks` (an image or document among them is a 400 naming it)."""
    for j, block in enumerate(blocks):
        if isinstance(block, ImageBlock | DocumentBlock):
            raise _refused(block, f"{param}.{j}")
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))


def _image(block: ImageBlock, param: str) -> dict[str, Any]:
    """An image block as a chat `image_url` part (a `data:` URL of its base64 data)."""
    source = block.source
    kind = source.get("type")
    if kind == "url":
        raise not_fetched(str(source.get("url", "")), param)
    if kind == "file":
        raise no_files(param)
    data, media = source.get("data"), source.get("media_type")
    if kind != "base64" or not isinstance(data, str) or not isinstance(media, str):
        raise ApiError(
            400,
            "an image block's source is {type: base64, media_type, data}",
            param=f"{param}.source",
            code="invalid_image",
        )
    return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}


class _Seeing:
    """Whether the served model sees images, its name, and the chat parts' names here."""

    def __init__(self, sees: bool, model: str) -> None:
        self.sees, self.model = sees, model
        self.places: dict[str, str] = {}  # `messages.I.content.J` → the block's own name


def _content(plain: list[tuple[int, Any]], i: int, at: int, seeing: _Seeing) -> Any:
    """A user's text and image blocks (with their indices) as the chat content of message
    `at`: the text, or text and image parts in order when it has images."""
    if not any(isinstance(b, ImageBlock) for _, b in plain):
        return _text([b for _, b in plain], f"messages.{i}.content")
    parts: list[dict[str, Any]] = []
    for j, block in plain:
        param = f"messages.{i}.content.{j}"
        if isinstance(block, ImageBlock):
            if not seeing.sees:
                raise text_only(seeing.model, param, "image blocks")
            seeing.places[f"messages.{at}.content.{len(parts)}"] = param
            parts.append(_image(block, param))
        elif isinstance(block, DocumentBlock):
            raise _refused(block, param)
        else:
            parts.append({"type": "text", "text": block.text})
    return parts


def _user(m: MessageParam, i: int, at: int, seeing: _Seeing) -> list[dict[str, Any]]:
    """The chat messages of a user's message `i` (tool results first), the first at `at`."""
    if isinstance(m.content, str):
        return [{"role": "user", "content": m.content}]
    out: list[dict[str, Any]] = []
    for j, block in enumerate(m.content):
        if isinstance(block, ToolResultBlock):
            where = f"messages.{i}.content.{j}.content"
            said = block.content if isinstance(block.content, str) else _text(block.content, where)
            content = f"Error: {said}" if block.is_error else said
            out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        elif not isinstance(block, TextBlock | ImageBlock | DocumentBlock):
            raise ApiError(
                400,
                f"a user message cannot hold {block.type} blocks",
                param=f"messages.{i}.content.{j}",
            )
    plain = [(j, b) for j, b in enumerate(m.content) if not isinstance(b, ToolResultBlock)]
    if plain:
        out.append({"role": "user", "content": _content(plain, i, at + len(out), seeing)})
    return out


def _assistant(m: MessageParam, i: int) -> dict[str, Any]:
    if isinstance(m.content, str):
        return {"role": "assistant", "content": m.content}
    texts, calls, thought = [], [], ""
    for j, block in enumerate(m.content):
        if isinstance(block, ToolUseBlock):
            function = {"name": block.name, "arguments": json.dumps(block.input)}
            calls.append({"id": block.id, "type": "function", "function": function})
        elif isinstance(block, ThinkingBlock):
            thought += block.thinking
        elif isinstance(block, TextBlock | ImageBlock | DocumentBlock):
            texts.append(block)
        elif not isinstance(block, RedactedThinkingBlock):  # encrypted elsewhere: not ours
            raise ApiError(
                400,
                f"an assistant message cannot hold {block.type} blocks",
                param=f"messages.{i}.content.{j}",
            )
    said: dict[str, Any] = {"role": "assistant", "content": _text(texts, f"messages.{i}.content")}
    if calls:
        said["tool_calls"] = calls
    if thought:
        said["reasoning_content"] = thought
    return said


def _messages(request: CountRequest, seeing: _Seeing) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        system = request.system
        text = system if isinstance(system, str) else _text(list(system), "system")
        out.append({"role": "system", "content": text})
    for i, m in enumerate(request.messages):
        out += _user(m, i, len(out), seeing) if m.role == "user" else [_assistant(m, i)]
    if request.messages[-1].role == "assistant":
        raise ApiError(
            400,
            "the last message must be the user's: continuing an assistant message (a prefill)"
            " is not supported here",
            param=f"messages.{len(request.messages) - 1}.role",
        )
    return out


def _tool_choice(choice: dict[str, Any]) -> str | dict[str, Any]:
    kind = choice.get("type")
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise ApiError(
        400, "tool_choice is {type: auto | any | none} or {type: tool, name}", param="tool_choice"
    )


def _tools(tools: list[ToolParam]) -> list[dict[str, Any]]:
    for i, t in enumerate(tools):
        if t.type not in (None, "custom") or t.input_schema is None:
            raise ApiError(
                400,
                f"tool {t.name!r} is a server tool ({t.type}) or has no input_schema: only"
                " client tools with an input_schema are supported here",
                param=f"tools.{i}",
                code="unsupported_tool",
            )
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in tools
    ]


def _output(config: OutputConfig | None) -> dict[str, Any]:
    """`output_config` as chat fields: its effort (at most high) and its JSON format."""
    said: dict[str, Any] = {}
    if config is not None and config.effort is not None:
        effort = config.effort
        said["reasoning_effort"] = "high" if effort in ("xhigh", "max") else effort
    if config is not None and config.format is not None:
        if config.format.get("type") != "json_schema" or "schema" not in config.format:
            raise ApiError(
                400,
                "output_config.format is {type: json_schema, schema}",
                param="output_config.format",
            )
        schema = {"name": "output", "schema": config.format["schema"]}
        said["response_format"] = {"type": "json_schema", "json_schema": schema}
    return said


def chat_body(
    request: CountRequest, sees: bool = False, model: str = "this model"
) -> tuple[dict[str, Any], dict[str, str]]:
    """The chat-completions body that asks the same (see the module guarantees), and the
    request's names of its image parts (`messages.I.content.J` → the block, for errors); `sees`:
    whether the served model (`model`) sees images."""
    seeing = _Seeing(sees, model)
    body: dict[str, Any] = {"model": request.model, "messages": _messages(request, seeing)}
    if request.tools:
        body["tools"] = _tools(request.tools)
    if request.tool_choice is not None:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.thinks and request.thinking and request.thinking.budget_tokens:
        body["thinking_budget"] = request.thinking.budget_tokens
    body.update(_output(request.output_config))
    if isinstance(request, MessagesRequest):
        body["max_tokens"] = request.max_tokens
        if request.stop_sequences:
            body["stop"] = request.stop_sequences
        for name in ("temperature", "top_p", "top_k"):
            if getattr(request, name) is not None:
                body[name] = getattr(request, name)
    return body, seeing.places


__all__ = ["CountRequest", "MessagesRequest", "chat_body"]
