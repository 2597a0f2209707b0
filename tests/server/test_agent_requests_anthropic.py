"""What an agent like Claude Code sends to `/v1/messages` in good faith is taken: its first request
(system text blocks and tools with `cache_control`, a `system` message after the user's, the
`context_management` beta, `metadata.user_id`, `thinking`, a stream) is answered 200 with the
fields it gives and we do not apply named in the warning header, the system message's text in
the developer instructions of the prompt the model reads; a field no API defines is still a 400
that names it. Every field of Anthropic's Messages API gets its decision (honoured, accepted
silently, accepted and said ignored, refused: `app/server/anthropic/wire.py`), pinned here on
the converter. The server runs in-process on loopback on a scripted Harmony token source (the
real models answer Anthropic's API in `test_messages.py`), with Anthropic's own SDK as one of
its clients.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2 as httpx
import pytest

from app.domain.messages import DeveloperContent, Role
from app.engine.local.scripted import ScriptedClient
from app.server.anthropic.convert import asked
from app.server.anthropic.wire import CountRequest, MessagesRequest
from app.server.asked import Asked, Target
from app.server.errors import ApiError, parse
from app.server.options import ServeOptions
from app.templates.registry import get_template
from tests.server.in_process import scripted_server
from tests.server.test_server import _free_port

WARNING = "X-Harmony-Desk-Warning"
ANSWER = ("<|channel|>analysis<|message|>The test asserts 2 + 2 == 5.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>The assertion is wrong: 2 + 2 is 4.<|return|>")
BILLING = "x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=a5145;"
IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
GUIDE = ("You are an interactive CLI tool that helps users with software engineering tasks. Use the "
         "instructions below and the tools available to you to assist the user.")
REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
            "# claudeMd\nRun the tests with `pytest -q`.\n</system-reminder>")
TASK = "Fix the failing test in tests/test_math.py"
ENVIRONMENT = ("<env>\nWorking directory: /home/dev/zebra-project\nIs directory a git repo: Yes\n"
               "Platform: linux\nToday's date: 2026-05-01\n</env>")
EPHEMERAL = {"type": "ephemeral"}
DRAFT7 = "http://json-schema.org/draft-07/schema#"
TOOLS: list[dict[str, Any]] = [
    {"name": "Bash", "description": "Executes a given bash command in a persistent shell session.",
     "input_schema": {"type": "object", "properties": {
         "command": {"type": "string", "description": "The command to execute"},
         "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"},
         "description": {"type": "string", "description": "Clear, concise description of what this command does"},
         "run_in_background": {"type": "boolean"}},
         "required": ["command"], "additionalProperties": False, "$schema": DRAFT7}},
    {"name": "Read", "description": "Reads a file from the local filesystem.",
     "input_schema": {"type": "object", "properties": {
         "file_path": {"type": "string", "description": "The absolute path to the file to read"},
         "offset": {"type": "number"}, "limit": {"type": "number"}},
         "required": ["file_path"], "additionalProperties": False, "$schema": DRAFT7}},
    {"name": "TodoWrite", "description": "Create and manage a structured task list.", "cache_control": EPHEMERAL,
     "input_schema": {"type": "object", "properties": {"todos": {"type": "array", "items": {
         "type": "object", "properties": {
             "content": {"type": "string", "minLength": 1},
             "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
             "activeForm": {"type": "string", "minLength": 1}},
         "required": ["content", "status", "activeForm"], "additionalProperties": False}}},
         "required": ["todos"], "additionalProperties": False, "$schema": DRAFT7}},
]
FIRST: dict[str, Any] = {  # Claude Code's first request, as it sends it (a max_tokens this server takes)
    "model": "local-model",  # ANTHROPIC_MODEL, as Claude Code is pointed at a local server
    "max_tokens": 4096,
    "system": [{"type": "text", "text": BILLING},
               {"type": "text", "text": IDENTITY, "cache_control": EPHEMERAL},
               {"type": "text", "text": GUIDE, "cache_control": EPHEMERAL}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": REMINDER},
                                     {"type": "text", "text": TASK, "cache_control": EPHEMERAL}]},
        {"role": "system", "content": ENVIRONMENT},
    ],
    "tools": TOOLS,
    "metadata": {"user_id": "user_5f2a_account__session_0b8c9d1e"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "temperature": 1,
    "stream": True,
}
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-app": "cli",
           "anthropic-beta": "claude-code-20250219,context-management-2025-06-27,interleaved-thinking-2025-05-14"}
HARMONY = Target(get_template("harmony"), "scripted", limit=4096)
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, ScriptedClient]]:
    """A server on a scripted gpt-oss source that answers every request with reasoning and a
    final answer, taking answers of up to 4096 tokens."""
    client = ScriptedClient([ANSWER] * 12)
    with scripted_server(client, ServeOptions(port=_free_port(), max_tokens=4096)) as base:
        yield base, client


def _post(base: str, body: dict[str, Any], path: str = "/v1/messages") -> httpx.Response:
    return httpx.post(f"{base}{path}", content=json.dumps(body), headers=HEADERS, timeout=60)


def _converted(body: dict[str, Any], request: type[CountRequest] = MessagesRequest) -> Asked:
    return asked(parse(request, body), HARMONY)


def _instructions(said: Asked) -> str:
    first = said.conversation.messages[0]
    assert first.author.role is Role.DEVELOPER and isinstance(first.content[0], DeveloperContent)
    return first.content[0].instructions or ""


def test_the_first_request_becomes_one_conversation_with_its_system_message_in_its_place() -> None:
    said = _converted(FIRST)
    steady = BILLING.replace("cch=a5145;", "cch=fffff;")  # the same on every request
    system = steady + IDENTITY + GUIDE  # text blocks are joined, as a user's are
    assert _instructions(said) == system
    roles = [m.author.role for m in said.conversation.messages]
    assert roles == [Role.DEVELOPER, Role.USER, Role.DEVELOPER]  # the environment after the task, as sent
    assert said.conversation.messages[1].content[0].text == REMINDER + TASK  # type: ignore[union-attr]
    assert said.conversation.messages[2].text == ENVIRONMENT
    assert said.ignored == ("context_management",)  # metadata and cache_control change nothing
    generation = said.generation
    assert set(generation.tools or {}) == {"Bash", "Read", "TodoWrite"} and generation.tool_choice == "auto"
    assert (generation.max_tokens, generation.thinking_budget) == (4096, 1024)
    counted = _converted({k: v for k, v in FIRST.items() if k not in ("max_tokens", "metadata", "temperature",
                                                                   "stream")}, CountRequest)
    assert counted.conversation == said.conversation and counted.ignored == said.ignored


def test_system_messages_before_the_first_turn_join_the_instructions_and_later_ones_keep_their_place() -> None:
    said = _converted({"max_tokens": 8, "system": "One.", "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Two", "cache_control": EPHEMERAL},
                                       {"type": "text", "text": "."}]},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "system", "content": "Three."},
        {"role": "user", "content": "Go on."},
        {"role": "system", "content": "Four."},
    ]})
    assert _instructions(said) == "One.\n\nTwo."
    messages = said.conversation.messages
    assert [m.author.role for m in messages] == [Role.DEVELOPER, Role.USER, Role.ASSISTANT, Role.DEVELOPER,
                                                 Role.USER, Role.DEVELOPER]
    assert (messages[3].text, messages[5].text) == ("Three.", "Four.")


@pytest.mark.parametrize(("extra", "ignored"), [
    ({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}, ("context_management",)),
    ({"compaction": {"trigger": {"type": "input_tokens", "value": 100000}}}, ("compaction",)),
    ({"container": "container_011CZ"}, ("container",)),
    ({"container": {"id": None, "skills": [{"type": "anthropic", "skill_id": "pptx"}]}}, ("container",)),
    ({"diagnostics": {"previous_message_id": "msg_1"}}, ("diagnostics",)),
    ({"speed": "fast"}, ("speed",)),
    ({"output_config": {"task_budget": {"type": "tokens", "total": 100000}}}, ("output_config.task_budget",)),
    ({"tools": TOOLS, "tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
     ("tool_choice.disable_parallel_tool_use",)),
    ({"tools": TOOLS, "tool_choice": {"type": "any", "disable_parallel_tool_use": False}}, ()),
    ({"speed": "standard"}, ()),
    ({"metadata": {"user_id": "u1"}, "service_tier": "standard_only", "inference_geo": "us"}, ()),
    ({"cache_control": EPHEMERAL, "system": [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]}, ()),
    ({"mcp_servers": []}, ()),
    ({"top_k": 40, "top_p": 0.9, "temperature": 0.2}, ()),
    ({"thinking": {"type": "adaptive"}}, ()),
    ({"thinking": {"type": "between_tools"}}, ()),
    ({"thinking": {"type": "enabled", "budget_tokens": 2048, "display": "omitted"}}, ()),
    ({"thinking": {"type": "disabled"}}, ()),
    ({"tools": [{**TOOLS[0], "type": "custom", "cache_control": EPHEMERAL}], "tool_choice": {"type": "tool", "name": "Bash"}}, ()),
    ({"tools": TOOLS, "tool_choice": {"type": "none"}}, ()),
])
def test_each_field_of_the_api_is_taken_and_what_is_not_applied_is_named(extra: dict[str, Any],
                                                                         ignored: tuple[str, ...]) -> None:
    assert _converted({"max_tokens": 8, "messages": HI, **extra}).ignored == ignored


@pytest.mark.parametrize(("body", "param", "says"), [
    ({"messages": HI, "frobnicate": 1}, "frobnicate", "unknown field"),
    ({"messages": HI, "tool_choice": {"type": "auto", "frobnicate": True}}, "tool_choice.frobnicate", "unknown field"),
    ({"messages": HI, "tool_choice": {"type": "sometimes"}}, "tool_choice.type", ""),
    ({"messages": HI, "thinking": {"type": "enabled", "frobnicate": 1}}, "thinking.frobnicate", "unknown field"),
    ({"messages": HI, "output_config": {"frobnicate": 1}}, "output_config.frobnicate", "unknown field"),
    ({"messages": HI, "speed": "ludicrous"}, "speed", ""),
    ({"messages": HI, "mcp_servers": [{"type": "url", "url": "https://mcp.example/sse", "name": "ex"}]},
     "mcp_servers", "connects to none"),
    ({"messages": [*HI, {"role": "system", "content": [{"type": "image", "source": {}}]}]},
     "messages.1.content.0", "text blocks only"),
    ({"messages": [*HI, {"role": "system", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]},
     "messages.1.content.0", "text blocks only"),
    ({"messages": [{"role": "system", "content": "Be brief."}]}, "messages.0.role", "no user message"),
    ({"messages": [*HI, {"role": "assistant", "content": "Well,"}, {"role": "system", "content": "Be brief."}]},
     "messages.1.role", "prefill"),
    ({"messages": [{"role": "tool", "content": "Hi"}]}, "messages.0.role", ""),
])
def test_what_no_api_defines_or_this_server_cannot_honour_is_a_400_naming_it(body: dict[str, Any], param: str,
                                                                             says: str) -> None:
    with pytest.raises(ApiError) as refused:
        _converted({"max_tokens": 8, **body})
    assert refused.value.status == 400 and refused.value.param == param, refused.value.message
    assert says in refused.value.message


def _stream(base: str, body: dict[str, Any]) -> tuple[httpx.Response, list[dict[str, Any]]]:
    with httpx.stream("POST", f"{base}/v1/messages", content=json.dumps(body), headers=HEADERS,
                      timeout=60) as answer:
        events = [json.loads(line.removeprefix("data: ")) for line in answer.iter_lines()
                  if line.startswith("data: ")]
    return answer, events


def test_claude_codes_first_request_is_answered_and_its_system_message_reaches_the_prompt(
        served: tuple[str, ScriptedClient]) -> None:
    base, client = served
    answer, events = _stream(base, FIRST)
    assert answer.status_code == 200, events
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers[WARNING] == "context_management is not supported: ignored"
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"], kinds
    started = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert started == ["thinking", "text"]  # thinking was asked for: the reasoning comes back
    text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    assert text == "The assertion is wrong: 2 + 2 is 4."
    prompt = client.encoding.decode(client.prompts[-1])
    developer = prompt[prompt.index("<|start|>developer"):prompt.index("<|start|>user")]
    assert GUIDE in developer and ENVIRONMENT in developer  # the system message's text, read by the model
    assert developer.index(GUIDE) < developer.index(ENVIRONMENT) and "Bash" in developer
    assert TASK in prompt[prompt.index("<|start|>user"):] and prompt.count("Working directory") == 1


def test_the_sdk_sends_the_same_request_and_reads_the_warning(served: tuple[str, ScriptedClient]) -> None:
    base, _ = served
    body = copy.deepcopy(FIRST)
    del body["stream"], body["temperature"]  # this SDK's `create` has no `temperature` keyword
    with anthropic.Anthropic(base_url=base, api_key="none", max_retries=0, timeout=60) as sdk:
        raw = sdk.beta.messages.with_raw_response.create(
            betas=["claude-code-20250219", "context-management-2025-06-27"], **body)
        message = raw.parse()
        assert raw.http_response.status_code == 200
        assert "context_management" in raw.headers[WARNING] and "metadata" not in raw.headers[WARNING]
        assert [b.type for b in message.content] == ["thinking", "text"] and message.stop_reason == "end_turn"
        counted = sdk.beta.messages.with_raw_response.count_tokens(
            model=body["model"], system=body["system"], messages=body["messages"], tools=body["tools"],
            thinking=body["thinking"], context_management=body["context_management"],
            betas=["context-management-2025-06-27"])
        assert counted.parse().input_tokens > 0 and "context_management" in counted.headers[WARNING]


def test_a_field_no_api_defines_is_still_a_400_naming_it_before_the_model(served: tuple[str, ScriptedClient]) -> None:
    base, client = served
    asked_before = len(client.prompts)
    for body, named in [({**FIRST, "frobnicate": True}, "frobnicate"),
                        ({**FIRST, "tool_choice": {"type": "auto", "frobnicate": 1}}, "tool_choice.frobnicate")]:
        answer = _post(base, body)
        said = answer.json()
        assert answer.status_code == 400 and said["error"]["type"] == "invalid_request_error", said
        assert f"unknown field '{named}'" in said["error"]["message"]
    assert len(client.prompts) == asked_before  # refused before the model read anything
    whole = _post(base, {**FIRST, "stream": False, "speed": "fast", "service_tier": "auto"})
    assert whole.status_code == 200 and whole.headers[WARNING] == "context_management, speed are not supported: ignored"


def test_claude_codes_billing_checksum_is_made_steady_so_its_prompt_can_be_reused() -> None:
    from app.server.anthropic.convert import steady

    one = "x-anthropic-billing-header: cc_version=2.1.3.e4f; cc_entrypoint=cli; cch=a1b2c;"
    two = "x-anthropic-billing-header: cc_version=2.1.3.e4f; cc_entrypoint=cli; cch=99x0z;"
    assert steady(one) == steady(two) == one.replace("a1b2c", "fffff")
    assert steady("You are Claude Code. cch=a1b2c;") == "You are Claude Code. cch=a1b2c;"  # not the line
    assert steady("x-anthropic-billing-header: cch=abc") == "x-anthropic-billing-header: cch=abc"  # not 5 + ;
