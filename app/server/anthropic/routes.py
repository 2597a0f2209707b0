"""`POST /v1/messages` and `/v1/messages/count_tokens`: Anthropic's Messages API, on the chat path.

Guarantees: a Messages request is read into the same chat request (`messages_convert`), so it
is answered by the same turn driver, parser and reply builder (`ChatApi.start`); the answer's
pieces are folded once (`Blocks`) into Anthropic's content blocks — `thinking` (with an opaque
`signature`, only when the request enables thinking), `text`, `tool_use` (its `input` the call's
arguments) — in the order they came, so a stream's events (`message_start`, `ping`,
`content_block_start` / `_delta` / `_stop` with their indices, `message_delta` with the stop
reason and usage, `message_stop`) add up to the whole message; `stop_reason` is `tool_use` when
the model called, `stop_sequence` (naming it) when one of the request's ended it, `max_tokens`
when the budget did, else `end_turn`; usage counts the prompt tokens the KV cache already held
as `cache_read_input_tokens` and the rest as `input_tokens`, so their sum is what
`count_tokens` says, counted on the very prompt ids a request renders (with images, on the
prompt the projector made of them: it is evaluated to know, so `message_start` of a stream,
which comes before that, counts each image as one token and `message_delta` says the real
count). Every error on these
routes (the guard's too) is Anthropic's `{"type": "error", "error": {"type", "message"}}` with
its status; one found after the first byte of a stream is an `error` event that ends it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.domain.events import GenerationDone, PromptRendered, TurnFailed
from app.domain.messages import Conversation
from app.engine.request import GenerationRequest
from app.engine.session import ModelSession
from app.server.answer import Answer, Piece, dumps
from app.server.chat_api import ChatApi, Running, warnings
from app.server.messages_convert import CountRequest, MessagesRequest, chat_body
from app.server.served import on_engine
from app.server.wire import ApiError, ChatRequest, parse

PATHS = ("/v1/messages", "/messages")
COUNT_PATHS = ("/v1/messages/count_tokens", "/messages/count_tokens")
_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error in Anthropic's shape, its type from its status."""
    kind = _TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def guard_body(path: str, error: ApiError) -> dict[str, Any]:
    """The body of the guard's refusal: Anthropic's shape on these routes, else OpenAI's."""
    if path.rstrip("/") in (*PATHS, *COUNT_PATHS):
        return error_body(error.status, error.message)
    return error.body()


def anthropic_shaped(
    endpoint: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """`endpoint` with its error answers (a body that is not JSON, a 500 too) in Anthropic's
    shape, the field at fault named in the message, its own headers kept."""

    async def shaped(request: Request) -> Response:
        response = await endpoint(request)
        if response.status_code < 400 or not isinstance(response, JSONResponse):
            return response
        said = json.loads(bytes(response.body)).get("error") or {}
        kept = {k: v for k, v in response.headers.items() if k.startswith("x-")}
        message, param = str(said.get("message", "")), said.get("param")
        if param and param not in message:  # Anthropic's shape has no field for it
            message = f"{param}: {message}"
        body = error_body(response.status_code, message)
        return JSONResponse(body, status_code=response.status_code, headers=kept)

    return shaped


def sse(kind: str, **fields: Any) -> bytes:
    """One server-sent event, named as its `type` (its data on one line: `dumps`)."""
    data = dumps({"type": kind, **fields})
    return f"event: {kind}\ndata: {data}\n\n".encode()


def signature_of(thinking: str) -> str:
    """A thinking block's opaque signature (a digest of its text)."""
    return base64.b64encode(hashlib.sha256(thinking.encode()).digest()).decode()


def input_of(arguments: str) -> dict[str, Any]:
    """A call's arguments as a `tool_use` input (arguments that are no JSON object: empty)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Blocks:
    """An answer's content blocks as its pieces come, and the events that build them."""

    def __init__(self, thinks: bool) -> None:
        self.thinks = thinks
        self.content: list[dict[str, Any]] = []
        self._open: str | None = None  # the kind of the last block, while it is open

    def feed(self, piece: Piece) -> list[bytes]:
        said = []
        if piece.reasoning and self.thinks:
            said += self._text("thinking", piece.reasoning)
        if piece.content:
            said += self._text("text", piece.content)
        for call in piece.calls:
            said += self._call(call)
        return said

    def _text(self, kind: str, text: str) -> list[bytes]:
        said = []
        if self._open != kind:
            said += self.close()
            block = {"type": kind, kind: "", **({"signature": ""} if kind == "thinking" else {})}
            self.content.append(block)
            said.append(sse("content_block_start", index=self._at, content_block=dict(block)))
            self._open = kind
        self.content[-1][kind] += text
        delta = {"type": f"{kind}_delta", kind: text}
        said.append(sse("content_block_delta", index=self._at, delta=delta))
        return said

    def _call(self, call: dict[str, Any]) -> list[bytes]:
        said = self.close()
        function = call["function"]
        block = {
            "type": "tool_use",
            "id": "toolu_" + call["id"].removeprefix("call_"),
            "name": function["name"],
            "input": input_of(function["arguments"]),
        }
        self.content.append(block)
        delta = {"type": "input_json_delta", "partial_json": dumps(block["input"])}
        return [
            *said,
            sse("content_block_start", index=self._at, content_block={**block, "input": {}}),
            sse("content_block_delta", index=self._at, delta=delta),
            sse("content_block_stop", index=self._at),
        ]

    def close(self) -> list[bytes]:
        """The events that end the open block (a thinking block's signature first)."""
        if self._open is None:
            return []
        said = []
        if self._open == "thinking":
            signature = self.content[-1]["signature"] = signature_of(self.content[-1]["thinking"])
            delta = {"type": "signature_delta", "signature": signature}
            said.append(sse("content_block_delta", index=self._at, delta=delta))
        self._open = None
        return [*said, sse("content_block_stop", index=self._at)]

    @property
    def _at(self) -> int:
        return len(self.content) - 1


def stop_of(answer: Answer) -> tuple[str, str | None]:
    """(`stop_reason`, `stop_sequence`) of an answer."""
    if answer.calls:
        return "tool_use", None
    if answer.stopped:
        return "stop_sequence", answer.cut.matched
    return ("max_tokens" if answer.finish_reason == "length" else "end_turn"), None


def usage_of(answer: Answer) -> dict[str, int]:
    """Anthropic's usage from OpenAI's: the cached prompt tokens apart from the rest."""
    usage = answer.usage()
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return {
        "input_tokens": usage["prompt_tokens"] - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": usage["completion_tokens"],
    }


class MessagesApi:
    """See the module guarantees."""

    def __init__(self, chat: ChatApi) -> None:
        self.chat = chat

    def posts(self) -> dict[str, Callable[[Request], Awaitable[Response]]]:
        """The routes, by path (their bodies read and checked by the server first)."""
        return {
            **dict.fromkeys(PATHS, self.messages),
            **dict.fromkeys(COUNT_PATHS, self.count_tokens),
        }

    def _seeing(self) -> tuple[bool, str]:
        return self.chat.served.sees_images, self.chat.served.name

    async def messages(self, request: Request) -> Response:
        asked_for: MessagesRequest = parse(MessagesRequest, request.state.json)
        body, places = chat_body(asked_for, *self._seeing())
        run = await self.chat.start(body, request.is_disconnected, places)
        head = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": self.chat.served.name,
        }
        if asked_for.stream:
            prompt = await _prompt_size(run)
            run.watcher.cancel()  # a streamed answer learns of a gone client from its writes
            stream = self._events(run, head, Blocks(asked_for.thinks), prompt)
            headers = warnings(run.ignored(), run.fitted())
            return StreamingResponse(stream, media_type="text/event-stream", headers=headers)
        blocks = Blocks(asked_for.thinks)
        async for piece in run.pieces():
            blocks.feed(piece)
        blocks.close()
        failure = run.failure()
        if failure is not None:
            raise failure
        stop, sequence = stop_of(run.answer)
        whole = {
            **head,
            "content": blocks.content,
            "stop_reason": stop,
            "stop_sequence": sequence,
            "usage": usage_of(run.answer),
        }
        problem = run.answer.problem()
        return JSONResponse(whole, headers=warnings(run.ignored(), run.fitted(), problem))

    async def _events(
        self, run: Running, head: dict[str, Any], blocks: Blocks, prompt: int
    ) -> AsyncIterator[bytes]:
        usage = {"input_tokens": prompt, "output_tokens": 0}
        started = {**head, "content": [], "stop_reason": None, "stop_sequence": None}
        yield sse("message_start", message={**started, "usage": usage})
        yield sse("ping")
        try:
            async for piece in run.pieces():
                for said in blocks.feed(piece):
                    yield said
        except ApiError as exc:  # after the first byte: said in the stream, which ends
            yield sse("error", error=error_body(exc.status, exc.message)["error"])
            return
        for said in blocks.close():
            yield said
        if run.answer.failed is not None:
            stopped = f"the model stopped: {run.answer.failed}"
            yield sse("error", error=error_body(503, stopped)["error"])
            return
        stop, sequence = stop_of(run.answer)
        delta = {"stop_reason": stop, "stop_sequence": sequence}
        yield sse("message_delta", delta=delta, usage=usage_of(run.answer))
        yield sse("message_stop")

    async def count_tokens(self, request: Request) -> Response:
        """`{"input_tokens": N}`: the prompt a request with this body would render."""
        counted: CountRequest = parse(CountRequest, request.state.json)
        body, places = chat_body(counted, *self._seeing())
        chat: ChatRequest = parse(ChatRequest, body)
        served = self.chat.served
        conversation = (await self.chat.asked(chat, places)).conversation

        def make() -> Any:
            session = served.session()
            if any(m.images for m in conversation.messages):
                yield _evaluated(session, conversation)
            else:
                yield session.prompt_size(conversation)

        counts = on_engine(served.engine, make, threading.Event(), served.stats)
        sizes = [n async for batch in counts for n in batch]
        return JSONResponse({"input_tokens": sizes[0]})


def _evaluated(session: ModelSession, conversation: Conversation) -> int:
    """The tokens of a prompt with images, as the projector makes them: known only once it has
    read them, so the prompt is evaluated (one token generated; the KV cache keeps the prompt
    for the request that follows)."""
    for event in session.generate(conversation, GenerationRequest(max_tokens=1)):
        if isinstance(event, TurnFailed):
            raise ApiError(400, event.reason, param="messages")
        if isinstance(event, GenerationDone):
            return event.timings.prompt_tokens
    return 0


async def _prompt_size(run: Running) -> int:
    """The tokens of the prompt the answer is generated from (read ahead to its rendering,
    which comes before the first token)."""
    while True:
        for batch in run.first:
            for item in batch:
                if isinstance(item, PromptRendered):
                    return len(item.ids)
        try:
            run.first.append(await anext(run.events))
        except StopAsyncIteration:
            return 0


__all__ = ["MessagesApi", "anthropic_shaped", "error_body", "guard_body"]
