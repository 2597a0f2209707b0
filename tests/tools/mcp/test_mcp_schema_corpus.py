"""An MCP schema corpus through the app's real MCP host: the tools of
`@modelcontextprotocol/server-everything` (from npm) and the 22 schemas with `$ref` of
tests/fixtures/schema_refs.json, served by a real SDK server (tests/fixtures/mcp_schema_server.py).
Each tool's schema compiles into the call grammar of every format, or its calls go unconstrained
with a notice; a turn offering them never fails — on a scripted model (a call that does not fit
is sent back once, before anyone is asked to approve it) and on the bundled SmolLM2 through the
terminal chat (a recursive schema held, a broken one said)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jsonschema import validators

from app.constrain.call_schema import call_schema
from app.domain.events import ParseIssue, ToolCallRequested, TurnResult
from app.domain.history import Reply
from app.domain.reply import ReplyBuilder
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.errors import ErrorCode
from app.secrets import Secrets
from app.templates.calls.formats import FORMATS
from app.templates.calls.grammar import call_grammar
from app.templates.harmony_grammar import harmony_constraint
from app.templates.registry import get_template
from app.tools.calls import Decision
from app.tools.mcp.config import McpServer
from app.tools.mcp.tools import McpPool
from app.tools.registry import ToolRegistry
from tests.keys.test_endpoints import cli, secret_service
from tests.npm_servers import command
from tests.tools.mcp.test_mcp_config import _env
from tests.turns import tool_turn

__all__ = ["secret_service"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SCHEMA_SERVER = str(FIXTURES / "mcp_schema_server.py")
CASES = {c["name"]: c for c in json.loads((FIXTURES / "schema_refs.json").read_text())["cases"]}


def _pool(name: str, argv: list[str]) -> McpPool:
    return McpPool(lambda: {name: McpServer(command=argv[0], args=tuple(argv[1:]))}, Secrets())


def _schemas(registry: ToolRegistry) -> dict[str, Any]:
    return {t.name: call_schema(t.parameters).schema for t in registry}


def _every_grammar_builds(schemas: dict[str, Any]) -> None:
    """The turn grammar offering all the tools at once, in Harmony and every call format."""
    assert harmony_constraint(None, tools=schemas, tool_choice="auto") is not None
    for fmt in FORMATS.values():
        assert call_grammar(fmt, schemas, "auto") is not None


def test_the_everything_servers_tools_compile_into_the_call_grammar() -> None:
    pool = _pool("everything", command("mcp-server-everything", "stdio"))
    try:
        registry = ToolRegistry(pool.tools("everything"))
        assert len(registry) >= 10 and all(t.plugin == "MCP everything" for t in registry)
        held = {t.name: call_schema(t.parameters) for t in registry}
        for name, decided in held.items():  # each is held, or said with its reason
            assert (decided.schema is not None) or decided.notice(name), name
        _every_grammar_builds(_schemas(registry))
        client = ScriptedClient([
            "<|channel|>commentary to=functions.everything__get_sum <|constrain|>json<|message|>{\"a\":2,\"b\":3}<|call|>",
            "<|channel|>final<|message|>Five.<|return|>",
        ])
        session = ChatSession(client, get_template("harmony"))
        events = list(tool_turn(session, "Add 2 and 3.", registry))
        result = events[-1]
        assert isinstance(result, TurnResult) and result.reason == "answer"
        assert result.records[0].outcome.ok and "5" in json.dumps(result.records[0].outcome.content)
    finally:
        pool.close()


def test_the_ref_corpus_over_a_real_server_is_held_or_said() -> None:
    pool = _pool("schemas", [sys.executable, SCHEMA_SERVER])
    try:
        registry = ToolRegistry(pool.tools("schemas"))
        assert {t.name.removeprefix("schemas__") for t in registry} == set(CASES)
        for tool in registry:
            case = CASES[tool.name.removeprefix("schemas__")]
            shown = tool.parameters  # what the model reads: references written out, objects closed
            decided = call_schema(shown)
            assert (decided.schema is not None and not decided.reason) is case["held"], tool.name
            if case["name"] != "missing_definition":
                check = validators.validator_for(shown)(shown)
                assert all(check.is_valid(v) for v in case["valid"]), tool.name  # closing refuses none
            for value in case["valid"]:  # read and checked against the server's own schema
                assert tool.parse_arguments(value).model_dump() == value
        _every_grammar_builds(_schemas(registry))
    finally:
        pool.close()


def _call(tool: str, arguments: dict[str, Any]) -> str:
    body = json.dumps(arguments, separators=(",", ":"))
    return f"<|channel|>commentary to=functions.schemas__{tool} <|constrain|>json<|message|>{body}<|call|>"


def test_a_call_that_does_not_fit_is_sent_back_once_and_the_turn_says_which_tool_is_unconstrained() -> None:
    pool = _pool("schemas", [sys.executable, SCHEMA_SERVER, "--only", "recursive_tree", "missing_definition"])
    try:
        registry = ToolRegistry(pool.tools("schemas"))
        tree = {"root": {"name": "a", "children": [{"name": "b"}]}}
        client = ScriptedClient([
            _call("recursive_tree", {"root": {"name": "a", "children": [{"children": []}]}}),
            _call("recursive_tree", tree),
            _call("missing_definition", {"v": 1}),
            _call("recursive_tree", {"root": {}}),
            _call("recursive_tree", {"root": []}),
            "<|channel|>final<|message|>Done.<|return|>",
        ])
        session = ChatSession(client, get_template("harmony"))
        asked: list[dict[str, Any]] = []

        def approve(call: Any) -> Decision:
            asked.append(call.arguments)
            return Decision(True, how="asked: allowed")

        events = list(tool_turn(session, "Draw a tree.", registry, approve=approve))
    finally:
        pool.close()
    notices = [e for e in events if isinstance(e, ParseIssue) and e.code is ErrorCode.CALL_SCHEMA]
    assert len(notices) == 1 and "functions.schemas__missing_definition" in notices[0].message
    assert "#/$defs/Gone" in notices[0].message and "not held to its schema" in notices[0].message
    assert events.index(notices[0]) < next(i for i, e in enumerate(events) if isinstance(e, ToolCallRequested))
    result = events[-1]
    assert isinstance(result, TurnResult) and result.reason == "answer"
    assert asked == [tree, {"v": 1}]  # a call that does not fit is never put to the user
    replies = [json.loads(m.text) for m in result.conversation.messages if m.author.role.value == "tool"]
    first, ran, unchecked, again, last = replies
    assert first["error"]["code"] == "E-CALL-SCHEMA" and "/root/children/0" in first["error"]["message"]
    assert "Call functions.schemas__recursive_tree once more" in first["error"]["message"]
    assert ran["ok"] and "got {" in json.dumps(ran["content"])
    assert unchecked["ok"] and "cannot read its own schema" in json.dumps(unchecked["content"])  # the server judged it
    assert "not repaired" in again["error"]["message"] and "not repaired" in last["error"]["message"]
    assert "once more" not in json.dumps(result.records[0].outcome.error)  # the audit keeps what the tool said
    reply = Reply()
    builder = ReplyBuilder(reply)
    for event in events:
        builder.apply(event)
    said = [s.text for s in reply.segments if s.kind == "notice"]
    assert any("schemas__missing_definition" in s for s in said), said  # the window shows it


def test_smollm2_calls_a_tool_with_a_recursive_schema_through_the_terminal(
    secret_service: dict[str, str], tmp_path: Path
) -> None:
    env = _env(tmp_path, secret_service)
    server = ["--", sys.executable, SCHEMA_SERVER, "--only"]
    assert cli(["mcp", "add", "tree", *server, "recursive_tree"], env).returncode == 0
    assert cli(["mcp", "add", "broken", *server, "missing_definition"], env).returncode == 0
    base = ["chat", "--model", "default", "--tool-choice", "required", "--yes", "--max-tokens", "160",
            "--temperature", "0"]
    done = cli([*base, "--mcp", "tree", "--prompt", "Make a tree with a root named a."], env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[turn failed]" not in done.stderr and "E-CALL-SCHEMA" not in done.stderr, done.stderr[-2000:]
    asked = [line for line in done.stderr.splitlines() if line.startswith("[tool call_1]")]
    assert asked and "recursive_tree · tree (" in asked[0], done.stderr[-2000:]
    ran = [line for line in asked if "] ok " in line]
    assert ran and "got {" in ran[0], asked  # the grammar held the tree: the server took it
    assert "[json tree__recursive_tree] valid" in done.stderr  # read and checked after
    broken = cli([*base, "--mcp", "broken", "--prompt", "Call the tool."], env)
    assert broken.returncode == 0 and "[turn failed]" not in broken.stderr, broken.stderr[-2000:]
    assert "[E-CALL-SCHEMA] The arguments of functions.broken__missing_definition are not held" in broken.stderr
    assert "#/$defs/Gone" in broken.stderr
