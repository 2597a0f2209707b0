"""The chat-completion wire format of OpenAI-compatible endpoints: what is sent, and the
shapes answers come back in.

Guarantees: what is sent is the conversation the user sees — analysis is never sent back,
developer instructions go as a system message in their place, tool calls and their results keep
their pairing, at most 32 function tools are declared; sampling set on the endpoint wins over
the session's; a user message with images is sent as OpenAI's content parts — each image an
`image_url` part with a `data:` URL of its kept bytes (`app.images.kept.find`), the text a
`text` part, in the message's order (Databricks serving endpoints, vLLM, llama-server and OpenAI
take this one shape) — and an image no longer kept is an `InvalidInputError` naming it, never a
request without it; `for_the_record` is the body with each image's data shortened, for the debug
record; the reasoning shapes servers use (`reasoning_content`, `reasoning`, `thinking`,
Databricks' typed content parts) are read here, and never echoed back.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

from app.constrain.constraint import ResponseFormat, ToolChoice
from app.domain.endpoint import Endpoint
from app.domain.instructions import turn_text
from app.domain.messages import (
    Conversation,
    DeveloperContent,
    ImageContent,
    Message,
    ReasoningEffort,
    Role,
    TextContent,
)
from app.domain.sampling import Sampling
from app.domain.visibility import is_tool_recipient
from app.errors import InvalidInputError
from app.templates.calls.format import openai_tools

REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")


def openai_client(endpoint: Endpoint, key: str | None) -> Any:
    """The SDK client for `endpoint` (its own retries off: this module retries and says so)."""
    from openai import OpenAI

    return OpenAI(
        base_url=endpoint.base_url,
        api_key=key or "no-key",
        timeout=endpoint.timeout_s,
        max_retries=0,
    )


def image_part(image: ImageContent, number: int) -> dict[str, Any]:
    """An image as an `image_url` part: a `data:` URL of its kept bytes (`number`: its place
    among the conversation's images, to name it when it is no longer kept)."""
    from app.images.kept import find

    picture = find(image.sha256, image.name)
    if picture is None:
        called = image.name or f"image {number}"
        raise InvalidInputError(f"{called} is no longer kept on this computer; attach it again")
    data = base64.b64encode(picture.data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{picture.mime};base64,{data}"}}


def _user(m: Message, before: int) -> dict[str, Any]:
    """A user message: its text, or (with images) its text and image parts in order;
    `before`: the conversation's images in earlier messages."""
    if not m.images:
        return {"role": "user", "content": m.text}
    parts: list[dict[str, Any]] = []
    for c in m.content:
        if isinstance(c, ImageContent):
            parts.append(image_part(c, before + 1))
            before += 1
        elif isinstance(c, TextContent) and c.text:
            parts.append({"type": "text", "text": c.text})
    return {"role": "user", "content": parts}


def to_openai(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation as chat-completion messages (analysis left out, calls paired)."""
    out: list[dict[str, Any]] = []
    calls: list[str] = []  # ids of the calls whose results are still to come, in order
    images = 0  # in the messages sent so far
    for m in conversation.messages:
        role = m.author.role
        if role is Role.SYSTEM:
            continue  # Harmony's system message (identity, dates, channels) is for gpt-oss only
        if role is Role.DEVELOPER:
            if text := turn_text(m):  # the opening instructions, or ones given later in place
                out.append({"role": "system", "content": text})
        elif role is Role.USER:
            out.append(_user(m, images))
            images += len(m.images)
        elif role is Role.TOOL:
            call_id = calls.pop(0) if calls else f"call_{len(out)}"
            out.append({"role": "tool", "tool_call_id": call_id, "content": m.text})
        elif m.channel == "analysis":
            continue  # reasoning is never sent back
        elif is_tool_recipient(m.recipient) and m.recipient:
            call_id = f"call_{len(out)}"
            calls.append(call_id)
            function = {"name": m.recipient.removeprefix("functions."), "arguments": m.text}
            call = {"id": call_id, "type": "function", "function": function}
            if out and out[-1]["role"] == "assistant" and "tool_calls" in out[-1]:
                out[-1]["tool_calls"].append(call)  # parallel calls: one assistant message
            else:
                # "" rather than null: servers that validate strictly refuse a null content
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        else:
            out.append({"role": "assistant", "content": m.text})
    return out


def declared_functions(conversation: Conversation) -> list[dict[str, Any]]:
    """The function tools the developer message declares, in the chat-completion shape."""
    for m in conversation.messages:
        for c in m.content:
            if isinstance(c, DeveloperContent) and c.tools and "functions" in c.tools:
                return openai_tools(c.tools["functions"].tools)[:32]
    return []


def request_body(
    endpoint: Endpoint,
    sampling: Sampling | None,
    default_max_tokens: int,
    conversation: Conversation,
    *,
    max_tokens: int | None = None,
    response_format: ResponseFormat | None = None,
    tool_choice: ToolChoice = "auto",
    reasoning_effort: ReasoningEffort | None = None,
    stop: Sequence[str] = (),
) -> dict[str, Any]:
    """The body of the chat-completion request for `conversation` (no key in it)."""
    e, s = endpoint, sampling
    body: dict[str, Any] = {
        "model": e.model,
        "messages": to_openai(conversation),
        "max_tokens": max_tokens or default_max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    temperature = e.temperature if e.temperature is not None else s and s.temperature
    top_p = e.top_p if e.top_p is not None else s and s.top_p
    top_k = e.top_k if e.top_k is not None else s and s.top_k
    if temperature is not None:
        body["temperature"] = temperature
    if top_p:
        body["top_p"] = top_p
    if top_k:
        body["extra_body"] = {"top_k": top_k}
    if s is not None and s.seed is not None:
        body["seed"] = s.seed
    if stop:
        body["stop"] = list(stop)[:4]
    if e.top_logprobs is not None:
        body["logprobs"] = True
        body["top_logprobs"] = e.top_logprobs
    tools = declared_functions(conversation)
    if tools:
        body["tools"] = tools
        body["tool_choice"] = (
            tool_choice
            if tool_choice in ("auto", "none", "required")
            else {"type": "function", "function": {"name": tool_choice}}
        )
    if response_format is not None and response_format.type == "json_object":
        body["response_format"] = {"type": "json_object"}
    elif response_format is not None and response_format.type == "json_schema":
        spec = response_format.json_schema
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": spec.name if spec else "response",
                "schema": response_format.json_schema_dict,
                "strict": True,
            },
        }
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort.value
    return body


def for_the_record(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with each image's `data:` URL cut to its head and size (the debug record keeps
    what was sent, not megabytes of base64)."""

    def shortened(part: Any) -> Any:
        url = part.get("image_url", {}).get("url") if isinstance(part, dict) else None
        if not isinstance(url, str) or not url.startswith("data:"):
            return part
        head, _, data = url.partition(",")
        said = f"{head},… ({len(data) * 3 // 4:,} bytes)"
        return {**part, "image_url": {**part["image_url"], "url": said}}

    messages = [
        {**m, "content": [shortened(p) for p in m["content"]]}
        if isinstance(m.get("content"), list)
        else m
        for m in body.get("messages", ())
    ]
    return {**body, "messages": messages}


def _part_value(part: Any, name: str) -> Any:
    return part.get(name) if isinstance(part, dict) else getattr(part, name, None)


def typed_parts(parts: list[Any]) -> Iterator[tuple[bool, str]]:
    """(is reasoning, text) of each typed content part: `{"type": "reasoning", "summary":
    [{"type": "summary_text", "text": ...}]}` (or its `content` of `reasoning_text` parts) is
    reasoning; `text` and `output_text` parts are the answer; other types carry no text."""
    for part in parts:
        kind = _part_value(part, "type")
        if kind == "reasoning":
            inner = (_part_value(part, "summary") or []) + (_part_value(part, "content") or [])
            text = "".join(str(_part_value(p, "text") or "") for p in inner)
            if text:
                yield True, text
        elif kind in ("text", "output_text"):
            text = str(_part_value(part, "text") or "")
            if text:
                yield False, text


def delta_field(delta: Any, name: str) -> str:
    """A field the SDK's delta model does not declare but servers send (reasoning)."""
    value = getattr(delta, name, None)
    if value is None:
        extra = getattr(delta, "model_extra", None) or {}
        value = extra.get(name)
    return value if isinstance(value, str) else ""


__all__ = [
    "REASONING_FIELDS",
    "declared_functions",
    "delta_field",
    "for_the_record",
    "image_part",
    "openai_client",
    "request_body",
    "to_openai",
    "typed_parts",
]
