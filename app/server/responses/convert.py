"""A Responses API request read as the chat-completions request that asks the same.

Guarantees: instructions, messages, `function_call` and `function_call_output` items (paired by
`call_id`), reasoning items kept before calls, tools, `tool_choice`, `reasoning.effort`,
`text.format`, `max_output_tokens` and `truncation: "auto"` (drop-middle: `overflow`) become
their chat fields; a message's `input_image` parts (a `data:` URL in `image_url`) become
`image_url` parts in their place among its text, checked where chat's are, an error naming the
input part (`input.I.content.J`); an image by `file_id` (this server keeps no files), an
`input_file` or `input_audio` part, a field this server does not take, an item type it does not
know, or content of a wrong type (a number, a boolean) is a 400 naming it; a schema nested too
deep is a 400 naming it (`intake.check_schema`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.server.intake import check_schema
from app.server.pictures import no_files
from app.server.wire import ApiError

_NOT_TEXT = ("input_image", "input_file", "input_audio")


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
    temperature: float | None = None
    top_p: float | None = None
    stream: bool = False
    store: bool | None = None
    metadata: dict[str, Any] | None = None
    user: str | None = None
    truncation: Literal["auto", "disabled"] | None = None  # auto: drop from the middle


def _text(content: Any, param: str) -> str:
    """The text of an item's content: a string, or parts with text (a 400 naming `param` for
    any other type)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ApiError(
            400,
            f"{param} must be a string or a list of parts, not {type(content).__name__}",
            param=param,
            code="invalid_value",
        )
    texts = [p.get("text", "") for p in content if isinstance(p, dict)]
    for j, text in enumerate(texts):
        if not isinstance(text, str):
            raise ApiError(400, f"{param}.{j}.text must be a string", param=f"{param}.{j}.text")
    return "".join(texts)


def _part(part: dict[str, Any], param: str) -> dict[str, Any]:
    """One content part of a message with images, as a chat content part."""
    kind = part.get("type")
    if kind == "input_image":
        if part.get("image_url") is None and part.get("file_id") is not None:
            raise no_files(param)
        image = {"url": part.get("image_url"), "detail": part.get("detail", "auto")}
        return {"type": "image_url", "image_url": image}
    if kind in _NOT_TEXT:
        raise ApiError(
            400,
            f"content parts of type {kind!r} are not supported: this server reads text and"
            " input_image parts",
            param=param,
            code="unsupported_content",
        )
    text = part.get("text", "")
    if not isinstance(text, str):
        raise ApiError(400, f"{param}.text must be a string", param=f"{param}.text")
    return {"type": "text", "text": text}


def _content(content: Any, param: str) -> str | list[dict[str, Any]]:
    """A message item's content for chat: its text, or (with images) one chat part for each of
    its parts, in order."""
    parts = content if isinstance(content, list) else []
    if not any(isinstance(p, dict) and p.get("type") in _NOT_TEXT for p in parts):
        return _text(content, param)
    return [_part(p, f"{param}.{j}") for j, p in enumerate(parts) if isinstance(p, dict)]


def _messages(request: ResponsesRequest) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The chat messages, and the input's name of each chat part that carries an image."""
    out: list[dict[str, Any]] = []
    places: dict[str, str] = {}
    if request.instructions:
        out.append({"role": "system", "content": request.instructions})
    items = (
        [{"role": "user", "content": request.input}]
        if isinstance(request.input, str)
        else request.input
    )
    reasoning = ""
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            content = _content(item.get("content"), f"input.{i}.content")
            if isinstance(content, list):
                places |= {f"messages.{len(out)}.content.{j}": f"input.{i}.content.{j}"
                           for j in range(len(content))}  # fmt: skip
            out.append({"role": item.get("role", "user"), "content": content})
        elif kind == "reasoning":
            reasoning += _text(item.get("content"), f"input.{i}.content") or _text(
                item.get("summary"), f"input.{i}.summary"
            )
        elif kind == "function_call":
            call = {
                "id": item.get("call_id", ""),
                "type": "function",
                "function": {
                    "name": item.get("name", ""),
                    "arguments": item.get("arguments", "{}"),
                },
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                out.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [call],
                        "reasoning_content": reasoning or None,
                    }
                )
            reasoning = ""
        elif kind == "function_call_output":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id", ""),
                    "content": _text(item.get("output"), f"input.{i}.output"),
                }
            )
        else:
            raise ApiError(
                400, f"input items of type {kind!r} are not supported", param=f"input.{i}.type"
            )
    return out, places


def check_schemas(request: ResponsesRequest) -> None:
    form = (request.text or {}).get("format")
    if isinstance(form, dict):
        check_schema(form.get("schema"), "text.format.schema")
    for i, tool in enumerate(request.tools or ()):
        check_schema(tool.get("parameters"), f"tools.{i}.parameters")


def chat_body(request: ResponsesRequest) -> tuple[dict[str, Any], dict[str, str]]:
    """The chat-completions body that asks the same, and the input's names of its image parts
    (`messages.I.content.J` → `input.K.content.J`, for errors)."""
    messages, places = _messages(request)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    for i, t in enumerate(request.tools or ()):
        if t.get("type") != "function":  # built-in tools (web search, files…) are not here
            raise ApiError(
                400,
                f"tools of type {t.get('type')!r} are not supported here: only functions",
                param=f"tools.{i}.type",
                code="unsupported_tool",
            )
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name"),
                    "description": t.get("description", ""),
                    "parameters": t.get("parameters"),
                },
            }
            for t in request.tools
        ]
    if isinstance(request.tool_choice, dict):
        body["tool_choice"] = {
            "type": "function",
            "function": {"name": request.tool_choice.get("name")},
        }
    elif request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    if request.truncation == "auto":
        body["overflow"] = "drop-middle"
    if request.reasoning and request.reasoning.get("effort"):
        body["reasoning_effort"] = request.reasoning["effort"]
    form = (request.text or {}).get("format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": form.get("name", "response"),
                "schema": form.get("schema", {}),
                "strict": form.get("strict"),
            },
        }
    elif isinstance(form, dict) and form.get("type") == "json_object":
        body["response_format"] = {"type": "json_object"}
    for ours, theirs in (
        ("max_tokens", "max_output_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
    ):
        if getattr(request, theirs) is not None:
            body[ours] = getattr(request, theirs)
    return body, places


__all__ = ["ResponsesRequest", "chat_body", "check_schemas"]
