"""Forced tool calls on tiny random-weight GGUFs of Gemma 4 and Nemotron Nano v2 that carry the
real tokenizer (Nemotron: the stand-in tests/tiny_models_more.py describes) and the official
template, read through the GGUF's own template (`gguf-jinja`, its call format detected): the
builders' promises, then a forced call that parses, validates, runs and is answered through
the turn loop, the terminal chat (a real MCP server built with the SDK) and the local server
(the `openai` SDK). The call's name and arguments are held by the token mask from its trigger,
so even random weights write a valid call; the draw is fixed (greedy decoding on seeded weights)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import llama_cpp
import pytest
from pydantic import Field

from app.domain.events import TurnResult
from app.domain.messages import Role
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.local.tokenizer import ModelTokenizer
from app.templates.registry import default_template_name, get_template
from app.tools.api import tool
from app.tools.registry import ToolRegistry
from tests import tiny_models, tiny_models_more
from tests.keys.test_endpoints import cli
from tests.server.test_server import _client, _closing, _serve
from tests.turns import tool_turn

__all__ = ["_closing"]
ENV_SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_env_server.py")
FORMATS = {"gemma4": "gemma4", "nemotron": "nemotron"}  # family: the call format it speaks
# the ids that must end a turn on each: its end of turn, and Gemma 4's hand-over after calls
TURN_ENDS = {"gemma4": {1, 50, 106}, "nemotron": {12}}
GREEDY = Sampling(temperature=0.0)
# the draw is fixed: greedy decoding on weights drawn from these seeds. A random-weight model
# may go on adding calls to Nemotron's array until the answer is cut off; these weights close it
SEEDS = {"gemma4": 1234, "nemotron": 5}
ASK = "What is the square of 7?"


@tool
def square(n: Annotated[int, Field(ge=0, le=99)]) -> int:
    """The square of a whole number from 0 to 99."""
    return n * n


@pytest.fixture(scope="module", params=tiny_models_more.FAMILIES)
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def model(family: str) -> Path:
    return tiny_models_more.build(family, seed=SEEDS[family])


def _ids(llm: Any, text: str, special: bool) -> list[int]:
    return list(llm.tokenize(text.encode(), add_bos=False, special=special))


def test_the_tiny_model_carries_its_template_markers_and_end_of_generation(
    family: str, model: Path
) -> None:
    llm = tiny_models.load(model, n_ctx=256)
    spec, vocab = tiny_models_more.spec(family), llm._model.vocab
    assert llm.metadata["tokenizer.chat_template"] == tiny_models_more.template(family)
    for text, token in tiny_models_more.markers(family).items():
        assert _ids(llm, text, special=True) == [token], text
        assert llm.detokenize([token], special=True) == text.encode()
    assert (llama_cpp.llama_vocab_bos(vocab), llama_cpp.llama_vocab_eos(vocab)) == (
        spec.bos,
        spec.eos,
    )
    eog = {t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)}
    assert eog == set(spec.eog)
    assert tiny_models_more.build(family, seed=SEEDS[family]) == model  # cached by its key


def test_gemma4_tokenizes_plain_text_as_the_real_tokenizer() -> None:
    llm = tiny_models.load(tiny_models_more.build("gemma4", seed=SEEDS["gemma4"]), n_ctx=64)
    folder = tiny_models.FIXTURES
    texts = (
        (folder / "ggml-vocab-gemma-4.gguf.inp").read_text("utf-8").split("\n__ggml_vocab_test__\n")
    )
    texts = texts[:-1] if texts[-1] == "" else texts
    ids = (folder / "ggml-vocab-gemma-4.gguf.out").read_text("utf-8").splitlines()
    assert len(texts) == len(ids) > 10
    for text, line in zip(texts, ids, strict=True):
        assert _ids(llm, text, special=False) == [int(t) for t in line.split()], repr(text)


@pytest.fixture(scope="module")
def loaded(family: str, model: Path) -> Iterator[WorkerClient]:
    client = WorkerClient()
    client.load(model, n_ctx=2048, n_threads=1)
    yield client
    client.close()


def test_the_gguf_template_speaks_the_family_and_stops_at_its_turn_ends(
    family: str, loaded: WorkerClient
) -> None:
    assert loaded.info is not None
    metadata = loaded.info.metadata
    assert default_template_name(metadata) == "gguf-jinja"
    template = get_template("gguf-jinja").for_model(metadata)
    assert template.tool_calls == FORMATS[family]
    assert set(template.stop_ids(ModelTokenizer(loaded))) == TURN_ENDS[family]
    assert template.opens_think is (family == "nemotron")  # its prompt ends with `<think>\n`


@pytest.mark.parametrize("choice", ["required", "square"])
def test_a_forced_call_parses_validates_runs_and_is_answered(
    family: str, loaded: WorkerClient, choice: str
) -> None:
    assert loaded.info is not None
    template = get_template("gguf-jinja").for_model(loaded.info.metadata)
    session = ChatSession(loaded, template, sampling=GREEDY, max_tokens=160, thinking_budget=8)
    events = list(tool_turn(session, ASK, ToolRegistry([square]), tool_choice=choice, max_calls=3))
    result = events[-1]
    assert isinstance(result, TurnResult), events[-3:]
    assert result.records, [e for e in events if not isinstance(e, TurnResult)][-5:]
    first = result.records[0]
    sent = json.loads(first.arguments_sent)
    assert first.tool == "functions.square" and set(sent) == {"n"} and 0 <= sent["n"] <= 99
    assert first.outcome.ok and first.outcome.content == sent["n"] ** 2
    roles = [m.author.role for m in session.conversation.messages]
    assert (
        Role.TOOL in roles and roles[-1] is Role.ASSISTANT
    )  # the result went back; it spoke after


def test_the_terminal_chat_runs_a_forced_mcp_call_and_is_answered(
    family: str, model: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
        "HARMONY_DESK_DATA": str(tmp_path / "data"),
        "HARMONY_DESK_CACHE": str(tmp_path / "cache"),
    }
    assert (
        cli(
            ["mcp", "add", "envy", "--tools", "square", "--", sys.executable, ENV_SERVER], env
        ).returncode
        == 0
    )
    done = cli(
        [
            "chat",
            "--model",
            str(model),
            "--prompt",
            ASK,
            "--threads",
            "1",
            "--ctx",
            "2048",
            "--max-tokens",
            "160",
            "--temperature",
            "0",
            "--thinking-budget",
            "8",
            "--mcp",
            "envy",
            "--tool-choice",
            "required",
            "--yes",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = [line for line in done.stderr.splitlines() if line.startswith("[tool call_")]
    assert any("] ok {" in line for line in ran), done.stderr[-3000:]
    assert not any("] error" in line for line in ran), done.stderr[-3000:]
    # the model was asked again with the results: a second generation (Nemotron's random
    # weights spend it thinking, so its answer text may be empty)
    summaries = [
        line for line in done.stderr.splitlines() if line.startswith(("[stop:", "[length:"))
    ]
    assert len(summaries) == 2, done.stderr[-3000:]
    assert family == "nemotron" or done.stdout.strip()
    audit = [
        json.loads(line)
        for line in (tmp_path / "data" / "tool-audit.jsonl").read_text().splitlines()
    ]
    first = audit[0]
    assert first["tool"] == "functions.envy__square" and first["ok"], first
    sent = json.loads(first["arguments_sent"])
    assert set(sent) == {"n"} and 0 <= sent["n"] <= 99  # the grammar kept to the server's schema
    assert first["result"] == {"result": sent["n"] ** 2}  # the real server ran it


SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}},
    "required": ["n"],
}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "square",
            "description": "The square of a whole number from 0 to 99.",
            "parameters": SCHEMA,
        },
    }
]


@pytest.fixture(scope="module")
def served(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(
        str(model),
        tmp_path_factory.mktemp("served"),
        "--max-tokens",
        "160",
        "--thinking-budget",
        "8",
    )


def test_the_server_returns_a_forced_call_and_answers_its_result(served: str) -> None:
    client = _client(served)
    ask: list[Any] = [{"role": "user", "content": ASK}]
    whole = client.chat.completions.create(
        model="m", messages=ask, tools=TOOLS, tool_choice="required", max_tokens=160, temperature=0
    )
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    call: Any = (choice.message.tool_calls or [])[0]
    sent = json.loads(call.function.arguments)
    assert call.function.name == "square" and set(sent) == {"n"} and 0 <= sent["n"] <= 99
    follow = [
        *ask,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(sent["n"] ** 2)},
    ]
    answered = client.chat.completions.create(
        model="m", messages=follow, tools=TOOLS, tool_choice="none", max_tokens=24, temperature=0
    )
    said = answered.choices[0].message
    assert answered.choices[0].finish_reason in ("stop", "length") and not said.tool_calls
    # the model spoke after the result (Nemotron's random weights may spend it all thinking,
    # and Gemma 4's may say nothing but its template's `<tool_response|>`, which the reply
    # builder takes out): tokens were generated, and no template markup reaches the client
    assert answered.usage is not None and answered.usage.completion_tokens > 0, answered
    shown = (said.content or "") + str((said.model_extra or {}).get("reasoning_content") or "")
    assert "tool_response" not in shown, answered
