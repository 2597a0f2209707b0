"""Codex's `custom` (freeform: `apply_patch`) and `namespace` (its MCP servers) tools through the
Responses API: a custom tool is offered as a function of one string, `input` (its grammar
described, said not enforced), and its call answered as a `custom_tool_call` whose `input` is
that string, streamed (`response.custom_tool_call_input.delta`/`.done`) and whole, never a
`function_call`; a namespace's tools are offered flattened (`mcp__server__tool`) and their
calls answered under the tool's own name with the `namespace` field; the calls and outputs
Codex sends back become the conversation's calls and results; a forced custom tool is a forced
function; the rest is a 400 naming the field. Conversion is checked on its own (pure), the
answer on a scripted Harmony source through the `openai` SDK, and once on the tiny real
gpt-oss, a call forced by `tool_choice`.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from openai.types.responses import ResponseCustomToolCall, ResponseFunctionToolCall
from starlette.testclient import TestClient

from app.domain.messages import DeveloperContent, ToolDescription
from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.server.app import make_app
from app.server.asked import Asked, Target
from app.server.errors import ApiError, parse
from app.server.options import ServeOptions
from app.server.responses.convert import asked
from app.server.responses.output import Output
from app.server.responses.tools import FREEFORM, INPUT_SCHEMA, arguments_of, names
from app.server.responses.wire import ResponsesRequest
from app.server.served import ServedModel
from app.templates.registry import get_template
from tests.server.test_schema import event_violations, violations
from tests.server.test_server import oss

__all__ = ["oss"]
HARMONY = Target(get_template("harmony"), "m", limit=64)
GRAMMAR = """start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: update_hunk
update_hunk: "*** Update File: " filename LF change_line+
filename: /(.+)/
change_line: ("+" | "-" | " ") /(.*)/ LF
%import common.LF"""
APPLY_PATCH: dict[str, Any] = {"type": "custom", "name": "apply_patch",
               "description": "Use the `apply_patch` tool to edit files. This is a FREEFORM tool.",
               "format": {"type": "grammar", "syntax": "lark", "definition": GRAMMAR}}
EXEC: dict[str, Any] = {"type": "custom", "name": "exec", "description": "Runs JavaScript.", "format": {"type": "text"}}
LOOKUP: dict[str, Any] = {"type": "function", "name": "lookup_quagga", "description": "Looks a page up.", "strict": False,
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
NOTE: dict[str, Any] = {"type": "custom", "name": "annotate", "description": "Adds a note to a page."}
PATCH = "*** Begin Patch\n*** Update File: zebra.py\n-colour = 'blak'\n+colour = 'black'\n*** End Patch\n"
NOTED = "custom tool grammars (apply_patch) are described to the model, not enforced"
DEEP = json.loads('{"type": "array", "items": ' * 40 + "{}" + "}" * 40)  # deeper than a schema may nest


def _namespace(name: str = "mcp__zebradocs") -> dict[str, Any]:
    """A namespace as Codex sends an MCP server's tools (`mcp__server`; older versions
    `mcp__server__`)."""
    return {"type": "namespace", "name": name, "description": "Tools of the zebradocs MCP server.",
            "tools": [LOOKUP, NOTE]}


def _responses(body: dict[str, Any]) -> Asked:
    return asked(parse(ResponsesRequest, {"model": "m", **body}), HARMONY)


def _offered(said: Asked) -> dict[str, ToolDescription]:
    """The functions the model is offered, by name (the developer message's `functions`)."""
    developer = said.conversation.messages[0].content[0]
    assert isinstance(developer, DeveloperContent) and developer.tools is not None
    return {t.name: t for t in developer.tools["functions"].tools}


def _refused(body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        _responses(body)
    assert refused.value.status == 400
    return refused.value


def test_a_custom_tool_is_offered_as_a_function_of_one_string_its_grammar_described() -> None:
    said = _responses({"input": "Fix the typo in zebra.py.", "tools": [APPLY_PATCH, EXEC],
                       "tool_choice": {"type": "custom", "name": "apply_patch"}})
    assert said.generation.tools == {"apply_patch": INPUT_SCHEMA, "exec": INPUT_SCHEMA}
    assert said.generation.tool_choice == "apply_patch"  # forced as a named function is
    offered = _offered(said)
    assert offered["apply_patch"].description.startswith(APPLY_PATCH["description"])
    assert FREEFORM in offered["apply_patch"].description and GRAMMAR in offered["apply_patch"].description
    assert offered["exec"].description == f"Runs JavaScript.\n\n{FREEFORM}"
    assert said.ignored == () and said.notes == (NOTED,)  # nothing left out; the grammar noted
    assert _responses({"input": "Hi", "tools": [EXEC], "tool_choice": "required"}).notes == ()
    blind = Target(get_template("completion"), "m", limit=64)  # no tool-call format: tools left out
    left = asked(parse(ResponsesRequest, {"input": "Hi", "tools": [APPLY_PATCH], "tool_choice": "none"}), blind)
    assert (left.ignored, left.notes) == (("tools",), ())  # no grammar said described to a model that has none


@pytest.mark.parametrize("spelled", ["mcp__zebradocs", "mcp__zebradocs__"])
def test_a_namespaces_tools_are_offered_flattened_as_codex_names_them(spelled: str) -> None:
    said = _responses({"input": "Look up quaggas.", "tools": [_namespace(spelled), EXEC]})
    assert said.generation.tools == {"mcp__zebradocs__lookup_quagga": LOOKUP["parameters"],
                                     "mcp__zebradocs__annotate": INPUT_SCHEMA, "exec": INPUT_SCHEMA}
    offered = _offered(said)
    assert offered["mcp__zebradocs__lookup_quagga"].description == (
        f"Looks a page up.\n\n({spelled}: Tools of the zebradocs MCP server.)")
    assert FREEFORM in offered["mcp__zebradocs__annotate"].description
    assert said.ignored == ()


def test_the_calls_codex_sends_back_are_the_conversations_calls_and_results() -> None:
    """A custom call and a namespaced call sent back read as the function calls the model was
    offered them as, and their outputs (a string or text parts) as their results."""
    tools = [APPLY_PATCH, _namespace()]
    sent = _responses({"tools": tools, "input": [
        {"role": "user", "content": "Fix the typo, then look it up."},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH, "status": "completed"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "Done."}]},
        {"type": "function_call", "call_id": "c2", "name": "lookup_quagga", "namespace": "mcp__zebradocs",
         "arguments": '{"query": "quagga"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "Found."},
    ]})
    plain = _responses({"tools": tools, "input": [
        {"role": "user", "content": "Fix the typo, then look it up."},
        {"type": "function_call", "call_id": "c1", "name": "apply_patch", "arguments": arguments_of(PATCH)},
        {"type": "function_call_output", "call_id": "c1", "output": "Done."},
        {"type": "function_call", "call_id": "c2", "name": "mcp__zebradocs__lookup_quagga",
         "arguments": '{"query": "quagga"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "Found."},
    ]})
    assert sent == plain
    call, result = sent.conversation.messages[2:4]
    assert call.recipient == "functions.apply_patch" and json.loads(call.text) == {"input": PATCH}
    assert result.author.name == "functions.apply_patch" and result.text == "Done."


@pytest.mark.parametrize(("body", "param", "code"), [
    ({"tools": [{**_namespace(), "tools": [{"type": "web_search"}]}]}, "tools.0.tools.0.type", "unsupported_tool"),
    ({"tools": [{**_namespace(), "tools": [_namespace()]}]}, "tools.0.tools.0.type", "unsupported_tool"),
    ({"tools": [APPLY_PATCH, {**LOOKUP, "name": "apply_patch"}]}, "tools.1.name", "invalid_value"),
    ({"tools": [{**EXEC, "name": "apply patch"}]}, "tools.0.name", "invalid_value"),
    ({"tools": [{**EXEC, "format": {"type": "yaml"}}]}, "tools.0.format.type", "invalid_value"),
    ({"tools": [{**_namespace(), "name": ""}]}, "tools.0.name", "invalid_value"),
    ({"tools": [{**_namespace(), "tools": [{**LOOKUP, "parameters": DEEP}]}]}, "tools.0.tools.0.parameters",
     "nested_too_deep"),
    ({"input": [{"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": 3}]},
     "input.0.input", "invalid_value"),
    ({"tools": [EXEC], "tool_choice": {"type": "custom", "name": "apply_patch"}}, "tool_choice", None),
])
def test_what_cannot_be_offered_or_read_is_a_400_naming_the_field(body: dict[str, Any], param: str,
                                                                  code: str | None) -> None:
    refused = _refused({"input": "Hi", **body})
    assert (refused.param, refused.error_code) == (param, code), refused.message


def test_each_call_is_answered_as_its_tool_was_declared() -> None:
    out = Output(names([APPLY_PATCH, EXEC, _namespace(), LOOKUP | {"name": "shell"}]))
    patch = out.call({"id": "call_1", "function": {"name": "apply_patch", "arguments": arguments_of(PATCH)}})
    bare = out.call({"id": "call_2", "function": {"name": "exec", "arguments": "console.log(1)"}})
    spaced = out.call({"id": "call_3", "function": {"name": "mcp__zebradocs__lookup_quagga", "arguments": "{}"}})
    noted = out.call({"id": "call_4", "function": {"name": "mcp__zebradocs__annotate", "arguments": arguments_of("x")}})
    plain = out.call({"id": "call_5", "function": {"name": "shell", "arguments": "{}"}})
    for item in (patch, bare, noted):
        assert violations("CustomToolCall", item) == []
        assert ResponseCustomToolCall.model_validate(item).type == "custom_tool_call"
    assert (patch["name"], patch["input"], patch["call_id"], patch["status"]) == ("apply_patch", PATCH, "call_1", "completed")
    assert patch["id"].startswith("ctc_") and "namespace" not in patch
    assert bare["input"] == "console.log(1)"  # a model that wrote the text bare: taken as it is
    assert (noted["name"], noted["namespace"], noted["input"]) == ("annotate", "mcp__zebradocs", "x")
    for item in (spaced, plain):
        assert violations("FunctionToolCall", item) == []
    assert ResponseFunctionToolCall.model_validate(spaced).namespace == "mcp__zebradocs"
    assert (spaced["type"], spaced["name"]) == ("function_call", "lookup_quagga")
    assert (plain["type"], plain["name"]) == ("function_call", "shell") and "namespace" not in plain


def _call(to: str, arguments: str) -> str:
    """A Harmony call the scripted source answers with (reasoning first, as gpt-oss does)."""
    return ("<|channel|>analysis<|message|>Patch it.<|end|><|start|>assistant"
            f"<|channel|>commentary to=functions.{to} <|constrain|>json<|message|>{arguments}<|call|>")


@contextmanager
def _serving(*scripts: str) -> Iterator[tuple[openai.OpenAI, TestClient, ScriptedClient]]:
    """The server on a scripted gpt-oss source answering with `scripts` in turn, and the SDK."""
    model = ScriptedClient(list(scripts))
    template = get_template("harmony")
    engine = cf.ThreadPoolExecutor(max_workers=1)

    def session() -> ChatSession:
        return ChatSession(model, template, sampling=Sampling(), max_tokens=256)

    served = ServedModel(name="gpt-oss-20b", engine=engine, session=session, template=template, n_ctx=8192)
    try:
        with TestClient(make_app(served, ServeOptions(max_tokens=256)), base_url="http://127.0.0.1:8080") as client:
            yield openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="none", http_client=client,
                                max_retries=0), client, model
    finally:
        engine.shutdown()


def test_a_custom_call_comes_back_as_a_custom_tool_call_streamed_and_whole() -> None:
    patched = _call("apply_patch", arguments_of(PATCH))
    with _serving(patched, patched, patched, _call("mcp__zebradocs__lookup_quagga", '{"query": "quagga"}'),
                  "<|channel|>final<|message|>Fixed.<|return|>") as (sdk, client, model):
        body: dict[str, Any] = {"model": "gpt-oss-20b", "input": "Fix the typo in zebra.py.",
                                "tools": [APPLY_PATCH, _namespace()], "tool_choice": {"type": "custom", "name": "apply_patch"}}
        whole = client.post("/v1/responses", json=body)
        assert whole.status_code == 200 and whole.headers["x-harmony-desk-warning"] == NOTED
        assert violations("Response", whole.json()) == []
        assert [i["type"] for i in whole.json()["output"]] == ["reasoning", "custom_tool_call"]
        prompt = model.encoding.decode(model.prompts[-1])
        assert "type apply_patch = " in prompt and "*** Begin Patch" in prompt  # the grammar described

        streamed = client.post("/v1/responses", json={**body, "stream": True})
        sent = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
        assert [v for e in sent for v in event_violations(e)] == []
        events = list(sdk.responses.create(**body, stream=True))  # as the SDK reads them
        kinds = [e.type for e in events]
        at = kinds.index("response.custom_tool_call_input.delta")
        assert kinds[at - 1: at + 3] == ["response.output_item.added", "response.custom_tool_call_input.delta",
                                          "response.custom_tool_call_input.done", "response.output_item.done"]
        added, delta, done, item_done = events[at - 1: at + 3]
        assert added.item.type == "custom_tool_call" and added.item.input == ""
        assert delta.delta == done.input == PATCH
        final = events[-1].response.output[-1]
        assert isinstance(final, ResponseCustomToolCall) and final.input == PATCH
        assert item_done.item == final
        assert "function_call" not in {i.type for i in events[-1].response.output}

        looked = sdk.responses.create(**{**body, "tool_choice": "auto"})
        call = looked.output[-1]
        assert isinstance(call, ResponseFunctionToolCall)
        assert (call.name, call.namespace, call.arguments) == ("lookup_quagga", "mcp__zebradocs", '{"query": "quagga"}')

        back = sdk.responses.create(**{**body, "tool_choice": "auto", "input": [  # what Codex sends next
            {"role": "user", "content": "Fix the typo in zebra.py."}, final.model_dump(exclude_none=True),
            {"type": "custom_tool_call_output", "call_id": final.call_id, "output": "Success. Updated zebra.py"}]})
        assert back.output_text == "Fixed."
        prompt = model.encoding.decode(model.prompts[-1])
        assert "to=functions.apply_patch" in prompt and "Success. Updated zebra.py" in prompt
        assert json.dumps(PATCH)[1:-1] in prompt  # the input, as the argument it was offered as


def test_the_tiny_gpt_oss_calls_a_forced_custom_tool_and_reads_its_output(oss: str) -> None:
    with openai.OpenAI(base_url=f"{oss}/v1", api_key="none", max_retries=0) as client:
        asked_for: dict[str, Any] = {"model": "m", "input": "Fix the typo in zebra.py.", "tools": [APPLY_PATCH],
                                     "tool_choice": {"type": "custom", "name": "apply_patch"},
                                     "max_output_tokens": 300, "reasoning": {"effort": "low"}}
        first = client.responses.create(**asked_for)
        calls = [i for i in first.output if isinstance(i, ResponseCustomToolCall)]
        assert [c.name for c in calls] == ["apply_patch"] and isinstance(calls[0].input, str), first.output
        assert all(i.type != "function_call" for i in first.output)
        streamed = list(client.responses.create(**asked_for, stream=True))
        done = streamed[-1].response
        call = next(i for i in done.output if isinstance(i, ResponseCustomToolCall))
        deltas = [e.delta for e in streamed if e.type == "response.custom_tool_call_input.delta"]
        assert "".join(deltas) == call.input
        back = client.responses.create(**{**asked_for, "tool_choice": "none", "input": [
            {"role": "user", "content": "Fix the typo in zebra.py."}, call.model_dump(exclude_none=True),
            {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success. Updated zebra.py"}]})
        assert back.status in ("completed", "incomplete")
        assert all(i.type not in ("function_call", "custom_tool_call") for i in back.output)
