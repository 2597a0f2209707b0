"""An Anthropic message as its content blocks: folded once from the answer's pieces, so a stream
and a whole message say the same.

Guarantees: the pieces are folded once (`Blocks`) into Anthropic's content blocks — `thinking`
(with an opaque `signature`, only when the request enables thinking), `text`, `tool_use` (its
`input` the call's arguments) — in the order they came, so a stream's events
(`content_block_start` / `_delta` / `_stop` with their indices) add up to the whole message's
blocks; `stop_reason` is `tool_use` when the model called, `stop_sequence` (naming it) when one
of the request's ended it, `max_tokens` when the budget did, else `end_turn`; usage counts the
prompt tokens the KV cache already held as `cache_read_input_tokens` and the rest as
`input_tokens`. Every event's data is on one line (`dumps`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from app.server.answer import Answer, Piece, dumps


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


def usage_of(answer: Answer) -> dict[str, Any]:
    """Anthropic's usage from OpenAI's: the cached prompt tokens apart from the rest (and the
    `compacted` object, when the prompt carried a summary)."""
    usage = answer.usage()
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    said = {
        "input_tokens": usage["prompt_tokens"] - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": usage["completion_tokens"],
    }
    return {**said, **({"compacted": usage["compacted"]} if "compacted" in usage else {})}


__all__ = ["Blocks", "input_of", "signature_of", "sse", "stop_of", "usage_of"]
