"""What coding agents send to the OpenAI routes in good faith is taken: Codex's first Responses
request (`include`, `prompt_cache_key`, `client_metadata`, `store: false`, a reasoning summary,
`text.verbosity`, a `web_search` tool and a `namespace` of MCP tools beside its functions — the
namespace offered flattened, `test_responses_codex_tools.py` —, a stream) and the
chat request of OpenCode, Qwen Code, aider and the `openai` SDK (`prompt_cache_key`,
`verbosity`, `service_tier`, `stream_options.include_obfuscation`, `reasoning_effort:
"minimal"`, `safety_identifier`, `prediction`, `store`, `metadata`, `modalities: ["text"]`,
`web_search_options`) are answered 200, the fields given that are not applied named in the
`X-Harmony-Desk-Warning` header, the tools this server does not run left out of the prompt the
model reads; a field no API defines is still a 400 that names it, and so is a request whose
meaning cannot be kept (a forced hosted tool, a stored response, audio out). The server runs
in-process on a scripted Harmony token source (the real models answer these APIs in
`test_server.py` and `test_schema.py`), with the `openai` SDK as one of its clients.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from starlette.testclient import TestClient

from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.server.app import make_app
from app.server.options import ServeOptions
from app.server.served import ServedModel
from app.templates.registry import get_template
from tests.server.test_schema import event_violations, violations

WARNING = "x-harmony-desk-warning"
ANSWER = ("<|channel|>analysis<|message|>The listing is one command away.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>There are two files: README.md and app.py.<|return|>")
INSTRUCTIONS = ("You are Codex, a coding agent based on GPT-5. You and the user share the same workspace "
                "and collaborate to achieve the user's goals.")
PERMISSIONS = ("<permissions instructions>Filesystem sandboxing: workspace-write. Approval policy: "
               "on-request.</permissions instructions>")
ENVIRONMENT = ("<environment_context>\n  <cwd>/home/dev/zebra-project</cwd>\n  <shell>bash</shell>\n"
               "</environment_context>")
TASK = "List the files in this project."
SHELL = {"type": "function", "name": "shell", "strict": False,
         "description": "Runs a shell command and returns its output.",
         "parameters": {"type": "object", "properties": {
             "command": {"type": "array", "items": {"type": "string"}, "description": "The command to execute"},
             "workdir": {"type": "string", "description": "The working directory to execute the command in"},
             "timeout_ms": {"type": "number", "description": "The timeout for the command in milliseconds"}},
             "required": ["command"], "additionalProperties": False}}
PLAN = {"type": "function", "name": "update_plan", "strict": False,
        "description": "Updates the task plan.",
        "parameters": {"type": "object", "properties": {
            "explanation": {"type": "string"},
            "plan": {"type": "array", "items": {"type": "object", "properties": {
                "step": {"type": "string"}, "status": {"type": "string"}},
                "required": ["step", "status"], "additionalProperties": False}}},
            "required": ["plan"], "additionalProperties": False}}
IMAGE = {"type": "function", "name": "view_image", "strict": False,
         "description": "Attach a local image (by filesystem path) to the conversation context for this turn.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                        "required": ["path"], "additionalProperties": False}}
WEB_SEARCH = {"type": "web_search", "external_web_access": False}
NAMESPACE = {"type": "namespace", "name": "mcp__zebradocs__", "description": "Tools of the zebradocs MCP server.",
             "tools": [{"type": "function", "name": "lookup_quagga", "description": "Looks a page up.",
                        "strict": False, "parameters": {"type": "object", "properties": {
                            "query": {"type": "string"}}, "required": ["query"]}}]}
CODEX: dict[str, Any] = {  # Codex's first request, as it sends it to a Responses provider
    "model": "gpt-oss-20b",
    "instructions": INSTRUCTIONS,
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": PERMISSIONS}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ENVIRONMENT}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]},
    ],
    "tools": [SHELL, PLAN, IMAGE, WEB_SEARCH, NAMESPACE],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "019a7c2e-5b0d-7f31-9a44-2f6e0c8d1b7a",
    "text": {"verbosity": "medium"},
    "client_metadata": {"x-codex-turn-id": "019a7c2e-5b0d-7f31-9a44-2f6e0c8d1b7b"},
}
CALL = {"type": "function_call", "name": "shell", "call_id": "call_ls",
        "arguments": json.dumps({"command": ["ls"], "workdir": "/home/dev/zebra-project"})}
SECOND: list[dict[str, Any]] = [  # what Codex sends back after running the call: the reasoning item with no encrypted content
    {"type": "reasoning", "summary": [],
     "content": [{"type": "reasoning_text", "text": "The listing is one command away."}], "encrypted_content": None},
    CALL,
    {"type": "function_call_output", "call_id": "call_ls", "output": "README.md\napp.py\n"},
]
BASH = {"type": "function", "function": {
    "name": "bash", "description": "Executes a given bash command in a persistent shell session.",
    "parameters": {"type": "object", "properties": {
        "command": {"type": "string", "description": "The command to execute"},
        "timeout": {"type": "number", "description": "Optional timeout in milliseconds"}},
        "required": ["command"], "additionalProperties": False}}}
READ = {"type": "function", "function": {
    "name": "read", "description": "Reads a file from the local filesystem.",
    "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}},
                   "required": ["filePath"], "additionalProperties": False}}}
OPENCODE: dict[str, Any] = {  # OpenCode's (and Qwen Code's) chat request to an OpenAI-compatible provider
    "model": "gpt-oss-20b",
    "messages": [{"role": "system", "content": "You are opencode, an interactive CLI tool for software engineering."},
                 {"role": "user", "content": "Fix the failing test in tests/test_zebra.py"}],
    "tools": [BASH, READ],
    "tool_choice": "auto",
    "stream": True,
    "stream_options": {"include_usage": True, "include_obfuscation": False},
    "prompt_cache_key": "ses_5f1c2a9e3ffe",
    "reasoning_effort": "minimal",
    "verbosity": "low",
    "service_tier": "flex",
    "max_tokens": 64,
    "temperature": 0.55,
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[TestClient, ScriptedClient]]:
    """The server on a scripted gpt-oss source that answers every generation the same."""
    model = ScriptedClient([ANSWER] * 64)
    template = get_template("harmony")
    engine = cf.ThreadPoolExecutor(max_workers=1)

    def session() -> ChatSession:
        return ChatSession(model, template, sampling=Sampling(), max_tokens=64)

    served = ServedModel(name="gpt-oss-20b", engine=engine, session=session, template=template, n_ctx=8192)
    with TestClient(make_app(served, ServeOptions(max_tokens=64)), base_url="http://127.0.0.1:8080") as client:
        yield client, model
    engine.shutdown()


def _events(text: str) -> list[dict[str, Any]]:
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in data if d != "[DONE]"]


def _refused(answer: Any, param: str, code: str | None) -> str:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == (param, code), error
    return str(error["message"])


def test_codexs_first_request_is_answered_with_the_tools_it_cannot_run_named(served: tuple[TestClient, ScriptedClient]) -> None:
    client, model = served
    answer = client.post("/v1/responses", json=CODEX)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers[WARNING] == "reasoning.summary, text.verbosity, web_search tool are not supported: ignored"
    events = _events(answer.text)
    assert [v for e in events for v in event_violations(e)] == []
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    done = events[-1]["response"]
    message = next(i for i in done["output"] if i["type"] == "message")
    assert message["content"][0]["text"] == "There are two files: README.md and app.py."
    assert [t["type"] for t in done["tools"]] == ["function", "function", "function", "web_search", "namespace"]
    prompt = model.encoding.decode(model.prompts[-1])
    assert INSTRUCTIONS in prompt and PERMISSIONS in prompt and ENVIRONMENT in prompt and TASK in prompt
    assert "type shell = " in prompt and "type update_plan = " in prompt and "type view_image = " in prompt
    assert "type mcp__zebradocs__lookup_quagga = " in prompt and "web_search" not in prompt
    assert "Reasoning: medium" in prompt


def test_codexs_next_request_sends_back_its_reasoning_call_and_output(served: tuple[TestClient, ScriptedClient]) -> None:
    client, model = served
    body = {**copy.deepcopy(CODEX), "stream": False}
    body["input"] += SECOND
    answer = client.post("/v1/responses", json=body)
    assert answer.status_code == 200, answer.text
    assert violations("Response", answer.json()) == []  # the hosted tools echoed as the schema has them
    assert "encrypted_content" not in answer.headers[WARNING]  # null: nothing to leave out
    prompt = model.encoding.decode(model.prompts[-1])
    assert "to=functions.shell" in prompt and "README.md\napp.py" in prompt
    assert "The listing is one command away." in prompt  # the reasoning kept before its call
    body["input"][3] = {**SECOND[0], "encrypted_content": "gAAAAABo-opaque"}  # from OpenAI's own servers
    sealed = client.post("/v1/responses", json=body)
    assert sealed.status_code == 200 and "encrypted_content of reasoning items" in sealed.headers[WARNING]


@pytest.mark.parametrize(("change", "said"), [
    ({"reasoning": {"effort": "minimal", "summary": "auto"}},
     'reasoning.summary, text.verbosity, web_search tool are not supported: ignored; '
     'reasoning.effort "minimal" is taken as "low", the nearest this server has'),
    ({"reasoning": {"effort": "high", "summary": "none"}, "text": {"format": {"type": "text"}}, "tools": [SHELL],
      "service_tier": "priority", "top_logprobs": 3, "include": ["message.output_text.logprobs"],
      "stream_options": {"include_obfuscation": True}, "safety_identifier": "hash-of-user", "user": "dev",
      "metadata": {"ticket": "Z-7"}, "truncation": "auto", "max_tool_calls": 4, "prompt_cache_retention": "24h"},
     'top_logprobs, include "message.output_text.logprobs", service_tier, stream_options.include_obfuscation'
     " are not supported: ignored"),
    ({"reasoning": {"effort": "low"}, "text": {"format": {"type": "text"}}, "tools": [SHELL, {"type": "custom",
      "name": "apply_patch", "description": "Applies a patch.",
      "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}]},
     "custom tool grammars (apply_patch) are described to the model, not enforced"),
])
def test_what_a_responses_request_gives_and_is_not_applied_is_named(
        served: tuple[TestClient, ScriptedClient], change: dict[str, Any], said: str) -> None:
    client, _ = served
    answer = client.post("/v1/responses", json={**CODEX, **change, "stream": False})
    assert answer.status_code == 200, answer.text
    assert answer.headers[WARNING] == said


@pytest.mark.parametrize(("change", "param", "code", "said"), [
    ({"frobnicate": True}, "frobnicate", "unknown_field", "unknown field 'frobnicate'"),
    ({"tool_choice": {"type": "web_search"}}, "tool_choice", "unsupported_tool", "forces a web_search tool"),
    ({"tool_choice": {"type": "custom", "name": "apply_patch"}}, "tool_choice", None, "not among the tools"),
    ({"tools": [WEB_SEARCH], "tool_choice": "required"}, "tool_choice", "unsupported_tool", "web_search tool"),
    ({"tool_choice": {"type": "function", "name": "lookup_quagga"}}, "tool_choice", None, "not among the tools"),
    ({"tools": [SHELL, {"type": "frobnicator"}]}, "tools.1.type", "unsupported_tool", "'frobnicator'"),
    ({"include": ["reasoning.everything"]}, "include.0", "invalid_value", "include.0"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning.effort", "invalid_value", "'minimal'"),
    ({"previous_response_id": "resp_1"}, "previous_response_id", "unsupported_parameter", "keeps no responses"),
    ({"background": True}, "background", "unsupported_parameter", "keeps no responses"),
    ({"conversation": "conv_1"}, "conversation", "unsupported_parameter", "keeps no conversations"),
    ({"stream_options": {"include_usage": True}}, "stream_options.include_usage", "unknown_field", "unknown field"),
])
def test_what_a_responses_request_cannot_mean_here_is_a_400_that_says_why(
        served: tuple[TestClient, ScriptedClient], change: dict[str, Any], param: str, code: str | None,
        said: str) -> None:
    client, model = served
    asked = len(model.prompts)
    assert said in _refused(client.post("/v1/responses", json={**CODEX, **change}), param, code)
    assert len(model.prompts) == asked  # none of it reached the model


def test_opencodes_chat_request_is_answered_with_the_fields_it_cannot_apply_named(
        served: tuple[TestClient, ScriptedClient]) -> None:
    client, model = served
    answer = client.post("/v1/chat/completions", json=OPENCODE)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers[WARNING] == ('verbosity, service_tier are not supported: ignored; reasoning_effort'
                                       ' "minimal" is taken as "low", the nearest this server has')
    assert answer.text.rstrip().endswith("data: [DONE]")
    chunks = _events(answer.text)
    assert [v for c in chunks for v in violations("CreateChatCompletionStreamResponse", c)] == []
    assert chunks[-1]["usage"]["completion_tokens"] > 0  # include_usage honoured
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "There are two files: README.md and app.py."
    assert all("obfuscation" not in c for c in chunks)  # include_obfuscation false: honoured
    prompt = model.encoding.decode(model.prompts[-1])
    assert "Reasoning: low" in prompt and "type bash = " in prompt and "type read = " in prompt


def test_a_budget_over_the_limit_is_a_ceiling_said_in_the_header(served: tuple[TestClient, ScriptedClient]) -> None:
    """OpenCode, Qwen Code and Claude Code ask 32,000 tokens, meaning at most that many."""
    client, _ = served
    chat = client.post("/v1/chat/completions", json={**OPENCODE, "max_tokens": 32000, "stream": False,
                                                     "reasoning_effort": "low", "verbosity": None,
                                                     "service_tier": None})  # fmt: skip
    assert chat.status_code == 200, chat.text
    assert chat.headers[WARNING] == "max_tokens 32000 is over this server's limit: 64 used"
    assert chat.json()["usage"]["completion_tokens"] <= 64
    responses = client.post("/v1/responses", json={"model": "m", "input": "Hi", "max_output_tokens": 32000})
    assert responses.status_code == 200, responses.text
    assert responses.headers[WARNING] == "max_output_tokens 32000 is over this server's limit: 64 used"


def test_the_openai_sdk_sends_every_field_and_reads_the_answer(served: tuple[TestClient, ScriptedClient]) -> None:
    client, _ = served
    sdk = openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="none", http_client=client, max_retries=0)
    raw = sdk.chat.completions.with_raw_response.create(  # type: ignore[call-overload]
        model="gpt-oss-20b", messages=[{"role": "user", "content": "Fix the failing test."}], tools=[BASH],
        reasoning_effort="high", prompt_cache_key="aider-1", safety_identifier="hash-of-user", store=False,
        metadata={"ticket": "Z-7"}, modalities=["text"], service_tier="auto",
        prediction={"type": "content", "content": "def test_zebra():\n    assert 2 + 2 == 4\n"},
        web_search_options={"search_context_size": "low"}, stream_options={"include_obfuscation": True})
    assert raw.headers[WARNING] == ("prediction, web_search_options, stream_options.include_obfuscation"
                                    " are not supported: ignored")
    completion = raw.parse()
    assert completion.choices[0].message.content == "There are two files: README.md and app.py."
    plain = sdk.chat.completions.with_raw_response.create(
        model="gpt-oss-20b", messages=[{"role": "user", "content": "Hi"}], reasoning_effort="medium",
        service_tier="default", prompt_cache_key="aider-1", store=True, user="dev")
    assert WARNING not in plain.headers  # all of it honoured: nothing to say


@pytest.mark.parametrize(("change", "param", "code"), [
    ({"frobnicate": 1}, "frobnicate", "unknown_field"),
    ({"stream_options": {"include_usage": True, "frobnicate": True}}, "stream_options.frobnicate", "unknown_field"),
    ({"modalities": ["text", "audio"]}, "modalities", "unsupported_value"),
    ({"audio": {"voice": "alloy", "format": "wav"}}, "audio", "unsupported_parameter"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort", "invalid_value"),
    ({"verbosity": "terse"}, "verbosity", "invalid_value"),
])
def test_what_a_chat_request_cannot_mean_here_is_a_400_that_names_it(
        served: tuple[TestClient, ScriptedClient], change: dict[str, Any], param: str, code: str) -> None:
    client, model = served
    asked = len(model.prompts)
    _refused(client.post("/v1/chat/completions", json={**OPENCODE, **change}), param, code)
    assert len(model.prompts) == asked


def test_each_requests_log_line_says_what_its_answer_read_and_wrote(
        served: tuple[TestClient, ScriptedClient], caplog: pytest.LogCaptureFixture) -> None:
    client, _ = served
    with caplog.at_level(logging.INFO, logger="server"):
        client.post("/v1/chat/completions", json={**OPENCODE, "stream": True, "max_tokens": 32})
        client.post("/v1/chat/completions", json={**OPENCODE, "stream": False, "max_tokens": 32, "n": 2})
    lines = [r.getMessage() for r in caplog.records if r.name == "server" and "/v1/chat/completions" in r.getMessage()]
    streamed, two = lines[-2:]
    assert re.search(r"; prompt \d+ \(evaluated \d+, reused \d+, restored \d+\), generated \d+$", streamed), streamed
    assert two.count("; prompt ") == 2, two  # one for each choice
