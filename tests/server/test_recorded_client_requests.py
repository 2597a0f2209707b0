"""Each agent client's first request, as it really sent it, is taken by the real server.

The requests are recorded by `python bench/agent_clients.py --record` (a proxy between each
client and `serve`; see `tests/fixtures/agent_requests/NOTE.md` for the client versions):
Claude Code's to `/v1/messages`, Codex's to `/v1/responses`, OpenCode's, Qwen Code's, aider's
and llm's to `/v1/chat/completions`, with their system prompts and tools whole. Each is posted
with its recorded headers and body (its `max_tokens` as recorded: the server caps answers at
16 tokens; the model it names, the bench's, becomes the served file's name, or the server
would load the bench's model from the library) to one `serve` process on the tiny
random-weight Qwen3 (32,768 tokens of context, a template with tool calls), and must be
answered 200 with a body well formed in its API: a stream read to its end, every chunk or
event valid (OpenAI's published schemas, the `anthropic` SDK's event types), in the order the
API gives them and ended as it ends them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pydantic
import pytest
from anthropic.types import Message, RawMessageStreamEvent

from tests.server.test_schema import event_violations, violations
from tests.server.test_server import _serve
from tests.tiny_models import build

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent_requests"
RECORDED = sorted(FIXTURES.glob("*.json"))
CLIENTS = {"claude-code", "codex", "opencode", "qwen-code", "aider", "llm"}
ANTHROPIC_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(RawMessageStreamEvent)


@pytest.fixture(scope="module")
def model() -> Path:
    return build("qwen3")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model: Path) -> Iterator[str]:
    """One server for every fixture: the tiny Qwen3 with room for Claude Code's prompt."""
    yield from _serve(
        str(model),
        tmp_path_factory.mktemp("recorded"),
        "--ctx",
        "32768",
        "--parallel",
        "1",
        "--max-tokens",
        "16",
    )


def _sse(text: str) -> tuple[list[dict[str, Any]], bool]:
    """A stream's JSON events, and whether it ended with `data: [DONE]`."""
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    done = bool(data) and data[-1] == "[DONE]"
    return [json.loads(d) for d in data if d != "[DONE]"], done


def _chat(body: dict[str, Any], text: str) -> list[str]:
    if not body.get("stream"):
        return violations("CreateChatCompletionResponse", json.loads(text))
    chunks, done = _sse(text)
    said = [v for c in chunks for v in violations("CreateChatCompletionStreamResponse", c)]
    finished = [
        c["finish_reason"] for chunk in chunks for c in chunk["choices"] if c.get("finish_reason")
    ]
    return (
        said
        + ([] if done else ["no data: [DONE] at the end"])
        + ([] if finished else ["no finish_reason"])
    )


def _responses(body: dict[str, Any], text: str) -> list[str]:
    if not body.get("stream"):
        return violations("Response", json.loads(text))
    events, _ = _sse(text)
    said = [v for e in events for v in event_violations(e)]
    last = events[-1]["type"] if events else None
    ended = last in ("response.completed", "response.incomplete")
    return said + (
        [] if ended else [f"the stream ended with {last!r}, not response.completed/incomplete"]
    )


def _messages(body: dict[str, Any], text: str) -> list[str]:
    if not body.get("stream"):
        Message.model_validate(json.loads(text))
        return []
    events = [e for e in _sse(text)[0] if e.get("type") != "ping"]
    said = []
    for event in events:
        try:
            ANTHROPIC_EVENT.validate_python(event)
        except pydantic.ValidationError as exc:
            said.append(f"{event.get('type')}: {exc.errors()[:2]}")
    kinds = [e.get("type") for e in events]
    if kinds[:1] != ["message_start"] or kinds[-1:] != ["message_stop"]:
        said.append(f"the stream is not message_start … message_stop: {kinds[:3]} … {kinds[-3:]}")
    started = [e["index"] for e in events if e.get("type") == "content_block_start"]
    stopped = [e["index"] for e in events if e.get("type") == "content_block_stop"]
    if started != stopped:
        said.append(f"content blocks started {started}, stopped {stopped}")
    if not any(e.get("type") == "message_delta" and e["delta"].get("stop_reason") for e in events):
        said.append("no message_delta with a stop_reason")
    return said


WELL_FORMED = {"chat": _chat, "responses": _responses, "messages": _messages}


def test_every_client_of_the_bench_has_its_first_request_recorded() -> None:
    assert {json.loads(p.read_text(encoding="utf-8"))["client"] for p in RECORDED} == CLIENTS
    assert {p.stem for p in RECORDED} == CLIENTS


@pytest.mark.parametrize("fixture", RECORDED, ids=[p.stem for p in RECORDED])
def test_a_clients_recorded_first_request_is_answered_in_its_api(
    served: str, model: Path, fixture: Path
) -> None:
    recorded = json.loads(fixture.read_text(encoding="utf-8"))
    headers = recorded["headers"]
    body = {**recorded["body"], "model": model.stem}  # the bench's model, here the tiny one's
    with httpx.Client(timeout=300) as client:
        answer = client.request(
            recorded["method"],
            served + recorded["path"],
            headers=headers,
            content=json.dumps(body, ensure_ascii=False).encode(),
        )
    assert answer.status_code == 200, (
        f"{recorded['client']}: {answer.status_code} {answer.text[:1500]}"
    )
    assert WELL_FORMED[recorded["api"]](body, answer.text) == []
