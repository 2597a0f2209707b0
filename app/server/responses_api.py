"""`POST /v1/responses`: the Responses API gpt-oss was designed around, on the chat path.

Guarantees: a Responses request is read into the same chat request (instructions, messages,
`function_call` and `function_call_output` items paired by `call_id`, reasoning items kept
before calls, tools, `tool_choice`, `reasoning.effort`, `text.format`, `max_output_tokens`), so
it is answered by the same turn, parser and reply builder; the answer is a `reasoning` item,
`function_call` items and a `message` item with `output_text`; streamed, it is the Responses
event sequence (`response.created`, output items added, text and reasoning deltas, items done,
`response.completed`) — sent once the answer is complete (the chat endpoint streams token by
token); a field this server does not take is a 400 naming it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.server.answer import dumps
from app.server.chat_api import ChatApi, Disconnected
from app.server.wire import ApiError, parse


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
    truncation: Literal["disabled"] | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content or () if isinstance(p, dict))


def _messages(request: ResponsesRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
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
            out.append({"role": item.get("role", "user"), "content": _text(item.get("content"))})
        elif kind == "reasoning":
            reasoning += _text(item.get("content")) or _text(item.get("summary"))
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
                    "content": _text(item.get("output")),
                }
            )
        else:
            raise ApiError(
                400, f"input items of type {kind!r} are not supported", param=f"input.{i}.type"
            )
    return out


def chat_body(request: ResponsesRequest) -> dict[str, Any]:
    """The chat-completions body that asks the same."""
    body: dict[str, Any] = {"model": request.model, "messages": _messages(request)}
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
            if t.get("type") == "function"
        ]
    if isinstance(request.tool_choice, dict):
        body["tool_choice"] = {
            "type": "function",
            "function": {"name": request.tool_choice.get("name")},
        }
    elif request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
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
    return body


class ResponsesApi:
    """See the module guarantees."""

    def __init__(self, chat: ChatApi) -> None:
        self.chat = chat

    async def __call__(self, body: Any, disconnected: Disconnected) -> Response:
        request: ResponsesRequest = parse(ResponsesRequest, body)
        completion = await self.chat(chat_body(request), disconnected)
        done = _decoded(completion)
        response = self.response(done, request)
        if not request.stream:
            return JSONResponse(response)
        return StreamingResponse(_events(response), media_type="text/event-stream")

    def response(self, completion: dict[str, Any], request: ResponsesRequest) -> dict[str, Any]:
        choice = completion["choices"][0]
        message = choice["message"]
        output: list[dict[str, Any]] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:
            output.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{uuid.uuid4().hex[:24]}",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": reasoning}],
                }
            )
        for call in message.get("tool_calls") or ():
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{uuid.uuid4().hex[:24]}",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                    "status": "completed",
                }
            )
        if message.get("content"):
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{uuid.uuid4().hex[:24]}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": message["content"], "annotations": []}
                    ],
                }
            )
        usage = completion["usage"]
        cut = choice["finish_reason"] == "length"
        return {
            "id": f"resp_{uuid.uuid4().hex[:24]}",
            "object": "response",
            "created_at": int(time.time()),
            "model": completion["model"],
            "status": "incomplete" if cut else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "output": output,
            "parallel_tool_calls": request.parallel_tool_calls is not False,
            "tool_choice": request.tool_choice or "auto",
            "tools": request.tools or [],
            "usage": {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
                "total_tokens": usage["total_tokens"],
            },
        }


def _decoded(response: Response) -> dict[str, Any]:
    import json

    return json.loads(bytes(response.body))  # type: ignore[no-any-return]


async def _events(response: dict[str, Any]) -> AsyncIterator[bytes]:
    """The Responses event sequence of a finished response."""
    number = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal number
        number += 1
        data = {"type": kind, "sequence_number": number, **fields}
        return f"event: {kind}\ndata: {dumps(data)}\n\n".encode()

    started = {**response, "status": "in_progress", "output": []}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        yield event(
            "response.output_item.added", output_index=index, item={**item, "status": "in_progress"}
        )
        if item["type"] == "reasoning":
            text = item["content"][0]["text"]
            yield event(
                "response.reasoning_text.delta",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                delta=text,
            )
            yield event(
                "response.reasoning_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
        elif item["type"] == "message":
            part = item["content"][0]
            yield event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": ""},
            )
            yield event(
                "response.output_text.delta",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                delta=part["text"],
                logprobs=[],
            )
            yield event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=part["text"],
                logprobs=[],
            )
            yield event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
        elif item["type"] == "function_call":
            yield event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)


__all__ = ["ResponsesApi", "ResponsesRequest", "chat_body"]
