"""A Responses API answer: the `response` object and, streamed, its event sequence.

Guarantees: the answer is a `reasoning` item, call items and a `message` item with
`output_text`, in the order they came; a call is answered as its tool was declared
(`tools.names`, read from the tools the response echoes): a `custom_tool_call` whose `input` is
the one string a custom tool takes (`tools.input_of`), never a `function_call`; a namespaced
tool's call under the tool's own `name` with its `namespace`; any other a `function_call`.
Streamed, it is the Responses event sequence (`response.created`, output items added, text and
reasoning deltas as the tokens come, a call's `function_call_arguments` or
`custom_tool_call_input` delta and done, items done, then `response.completed` — or
`response.incomplete`, status `incomplete`, when `max_output_tokens` cut it), whose deltas
add up to the items the response ends with; every object and event has the fields OpenAI's
published schema requires (`tests/server/test_schema.py`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from app.server.answer import Answer, Piece, dumps
from app.server.responses.tools import Named, input_of, names
from app.server.responses.wire import ResponsesRequest
from app.server.running import Running

PREFIXES = {"reasoning": "rs", "message": "msg", "function_call": "fc", "custom_tool_call": "ctc"}


def shell(model: str, request: ResponsesRequest) -> dict[str, Any]:
    """A response with no output yet."""
    return {
        "id": f"resp_{uuid.uuid4().hex[:24]}",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "metadata": request.metadata or {},
        "output": [],
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "temperature": request.temperature,  # null: the model's own
        "top_p": request.top_p,
        "tool_choice": request.tool_choice or "auto",
        "tools": [_tool(tool) for tool in request.tools or ()],
    }


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A request's function tool as a response names it (the fields the schema requires)."""
    if tool.get("type") != "function":
        return tool
    named = ("name", "description", "parameters", "strict")
    return {"type": "function", **{key: tool.get(key) for key in named}}


def _text_part(text: str = "") -> dict[str, Any]:
    """An `output_text` content part (no log-probabilities: `include` asking for them is not
    applied, and the warning header says so)."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class Output:
    """A response's output items as they grow: reasoning, calls, the message (`named`: the
    offered names whose calls are answered otherwise than as a `function_call`)."""

    def __init__(self, named: Mapping[str, Named] | None = None) -> None:
        self.items: list[dict[str, Any]] = []
        self.named = named or {}
        self._open: dict[str, dict[str, Any]] = {}

    def _item(self, kind: str, **fields: Any) -> dict[str, Any]:
        item = {"type": kind, "id": f"{PREFIXES[kind]}_{uuid.uuid4().hex[:24]}", **fields}
        self.items.append(item)
        return item

    def _text(self, kind: str, text: str, **fields: Any) -> tuple[dict[str, Any], bool]:
        item = self._open.get(kind)
        new = item is None
        if item is None:
            item = self._open[kind] = self._item(kind, **fields)
        item["content"][0]["text"] += text
        return item, new

    def reasoning(self, text: str) -> tuple[dict[str, Any], bool]:
        """The reasoning item with `text` added, and whether it is new."""
        return self._text(
            "reasoning", text, summary=[], content=[{"type": "reasoning_text", "text": ""}]
        )

    def message(self, text: str) -> tuple[dict[str, Any], bool]:
        """The message item with `text` added, and whether it is new."""
        return self._text(
            "message",
            text,
            role="assistant",
            status="completed",
            content=[_text_part()],
        )

    def call(self, call: dict[str, Any]) -> dict[str, Any]:
        """The item of one call, answered as its tool was declared."""
        function = call["function"]
        name, arguments = function["name"], function["arguments"]
        declared = self.named.get(name, Named(name))
        spaced = {"namespace": declared.namespace} if declared.namespace else {}
        if declared.custom:
            return self._item(
                "custom_tool_call",
                call_id=call["id"],
                name=declared.name,
                input=input_of(arguments),
                status="completed",
                **spaced,
            )
        return self._item(
            "function_call",
            call_id=call["id"],
            name=declared.name,
            arguments=arguments,
            status="completed",
            **spaced,
        )


def finished(
    started: dict[str, Any], out: Output, finish: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """The response once its answer ended: `incomplete` when a token limit cut it."""
    cut = finish == "length"
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return {
        **started,
        "status": "incomplete" if cut else "completed",
        "completed_at": None if cut else int(time.time()),
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "output": out.items,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": usage["completion_tokens_details"],
            "total_tokens": usage["total_tokens"],
            **({"compacted": usage["compacted"]} if "compacted" in usage else {}),
        },
    }


class Stream:
    """The Responses events of an answer, sent as it is made."""

    def __init__(self, run: Running, started: dict[str, Any]) -> None:
        self.run, self.started, self.number = run, started, 0
        self.out = Output(names(started["tools"]))

    def _event(self, kind: str, **fields: Any) -> bytes:
        self.number += 1
        data = {"type": kind, "sequence_number": self.number, **fields}
        return f"event: {kind}\ndata: {dumps(data)}\n\n".encode()

    def _at(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"item_id": item["id"], "output_index": self.out.items.index(item)}

    async def events(self) -> AsyncIterator[bytes]:
        yield self._event("response.created", response=self.started)
        yield self._event("response.in_progress", response=self.started)
        async for piece in self.run.pieces():
            for data in self._piece(piece):
                yield data
        for item in self.out.items:
            if item["type"] in ("reasoning", "message"):  # a call's item is done as it came
                for data in self._close(item):
                    yield data
        answer = self.run.answer
        done = finished(self.started, self.out, answer.finish_reason, answer.usage())
        ended = "response.incomplete" if done["status"] == "incomplete" else "response.completed"
        yield self._event(ended, response=done)

    def _piece(self, piece: Piece) -> list[bytes]:
        said = []
        if piece.reasoning:
            item, new = self.out.reasoning(piece.reasoning)
            if new:
                said.append(self._added(item))
            said.append(
                self._event(
                    "response.reasoning_text.delta",
                    **self._at(item),
                    content_index=0,
                    delta=piece.reasoning,
                )
            )
        if piece.content:
            item, new = self.out.message(piece.content)
            if new:
                said.append(self._added(item))
                said.append(
                    self._event(
                        "response.content_part.added",
                        **self._at(item),
                        content_index=0,
                        part=_text_part(),
                    )
                )
            said.append(
                self._event(
                    "response.output_text.delta",
                    **self._at(item),
                    content_index=0,
                    delta=piece.content,
                    logprobs=[],
                )
            )
        for call in piece.calls:
            said += self._called(self.out.call(call))
        return said

    def _called(self, item: dict[str, Any]) -> list[bytes]:
        """A call's events: its item added, its whole input as one delta, done."""
        at = self._at(item)
        if item["type"] == "custom_tool_call":
            kind, text = "response.custom_tool_call_input", item["input"]
            done = {"input": text}
        else:
            kind, text = "response.function_call_arguments", item["arguments"]
            done = {"name": item["name"], "arguments": text}
        return [
            self._added(item),
            self._event(f"{kind}.delta", **at, delta=text),
            self._event(f"{kind}.done", **at, **done),
            self._event("response.output_item.done", output_index=at["output_index"], item=item),
        ]

    def _added(self, item: dict[str, Any]) -> bytes:
        shown = {**item, "status": "in_progress"}
        if item["type"] in ("reasoning", "message"):
            shown["content"] = [{**item["content"][0], "text": ""}]
        elif item["type"] == "custom_tool_call":
            shown["input"] = ""  # the delta brings it
        return self._event(
            "response.output_item.added", output_index=self.out.items.index(item), item=shown
        )

    def _close(self, item: dict[str, Any]) -> list[bytes]:
        text = item["content"][0]["text"]
        at = self._at(item)
        if item["type"] == "reasoning":
            said = [self._event("response.reasoning_text.done", **at, content_index=0, text=text)]
        else:
            said = [
                self._event(
                    "response.output_text.done", **at, content_index=0, text=text, logprobs=[]
                ),
                self._event(
                    "response.content_part.done", **at, content_index=0, part=item["content"][0]
                ),
            ]
        said.append(
            self._event(
                "response.output_item.done", output_index=self.out.items.index(item), item=item
            )
        )
        return said


def whole(started: dict[str, Any], answer: Answer) -> dict[str, Any]:
    """The response of an answer made whole."""
    out = Output(names(started["tools"]))
    if answer.reasoning:
        out.reasoning(answer.reasoning)
    for call in answer.calls:
        out.call(call)
    if answer.content:
        out.message(answer.content)
    return finished(started, out, answer.finish_reason, answer.usage())


__all__ = ["Output", "Stream", "finished", "shell", "whole"]
