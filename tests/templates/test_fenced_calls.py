"""Hermes calls written as fenced JSON blocks are read as calls to the declared tools, and any
other block stays answer text, every character, handed on as soon as it cannot be a call.

The first answers are what Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) wrote as Claude Code's
first turn, on our server and on llama-server (`bench/agent_clients.py --model
qwen2.5-coder-1.5b`), and its broken second turn (a Python triple-quoted string in JSON).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.templates.calls.format import CallFormat
from app.templates.calls.formats import FORMATS
from app.templates.calls.hermes import FencedHermes
from app.templates.calls.scanner import CallScanner, Scanned
from tests.templates.call_samples import scanned
from tests.templates.no_reader import Afresh

TOOLS = ("Read", "Write", "Edit", "Bash")
OURS = '```json\n{\n  "name": "Read",\n  "arguments": {\n    "file_path": "hello.py"\n  }\n}\n```'
THEIRS = '```json\n{"name": "Read", "arguments": {"file_path": "hello.py"}}\n```'
BROKEN = (
    '```json\n{\n  "name": "Write",\n  "arguments": {\n    "file_path": "hello.py",\n'
    '    "content": """\n# hello.py\n\nRun it:\n  ```\n  python hello.py\n  ```\n"""\n  }\n}\n```'
)


def calls_of(out: list[Any]) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for p in out if isinstance(p, Scanned) for c in p.calls]


def fenced() -> CallFormat:
    return FORMATS["hermes"].knowing(TOOLS)


@pytest.mark.parametrize("answer", [OURS, THEIRS], ids=["ours", "llama-server"])
def test_the_block_qwen_coder_wrote_is_a_call_to_read(answer: str) -> None:
    for pieces in ([answer], list(answer)):
        out = scanned(fenced(), pieces)
        assert calls_of(out) == [("Read", {"file_path": "hello.py"})]
        assert [p for p in out if isinstance(p, str)] == []
        assert out[0].raw == answer  # the whole block is the call's markup


def test_without_declared_tools_the_block_is_the_answer() -> None:
    plain = FORMATS["hermes"].knowing(())
    assert plain is FORMATS["hermes"]
    assert scanned(plain, list(THEIRS)) == [THEIRS]


@pytest.mark.parametrize(
    "answer",
    [
        THEIRS.replace('"Read"', '"Delete"'),  # a tool nobody declared
        '```json\n{"city": "Oslo", "name": "Read"}\n```',  # data that names no tool first
        '```python\nprint("```json")\n```\nDone.',
        '```\n{"name": "Read", "arguments": {}}\n// then it reads\n```',  # more than calls
        '```yaml\nname: Read\n```',
        "Two ticks `` and one ` are text.",
        "```",
    ],
)
def test_any_other_block_is_answer_text_character_for_character(answer: str) -> None:
    fmt = fenced()
    assert scanned(fmt, [answer]) == [answer]
    assert scanned(fmt, list(answer)) == [answer]


def test_a_block_that_is_no_call_is_handed_on_before_it_closes() -> None:
    scanner = CallScanner(fenced())
    assert scanner.feed("```") == []  # it may still be a call
    assert scanner.feed("py") == ["```py"]  # no language a call is written in
    scanner = CallScanner(fenced())
    assert scanner.feed('```json\n{ "n') == []
    assert scanner.feed("ote") == ['```json\n{ "note']
    scanner = CallScanner(fenced())
    assert scanner.feed('```json\n{"name": "Dele') == []
    assert scanner.feed('te", ') == ['```json\n{"name": "Delete", ']


def test_prose_then_a_block_of_two_calls() -> None:
    answer = (
        "I will read both files.\n\n```json\n"
        '{"name": "Read", "arguments": {"file_path": "a.py"}}\n'
        '{"name": "Bash", "parameters": "{\\"command\\": \\"ls\\"}"}\n```'
    )
    for pieces in ([answer], list(answer)):
        out = scanned(fenced(), pieces)
        assert out[0] == "I will read both files.\n\n"
        assert calls_of(out) == [("Read", {"file_path": "a.py"}), ("Bash", {"command": "ls"})]


def test_a_block_the_answer_ends_in_without_its_closing_fence_is_a_call() -> None:
    out = scanned(fenced(), list(THEIRS.removesuffix("```")))
    assert calls_of(out) == [("Read", {"file_path": "hello.py"})]


def test_a_broken_call_to_a_declared_tool_is_said_with_its_whole_block_and_never_run() -> None:
    for pieces in ([BROKEN + "\nDone."], list(BROKEN + "\nDone.")):
        out = scanned(fenced(), pieces)
        invalid = [p for p in out if isinstance(p, Scanned) and p.invalid]
        assert len(invalid) == 1 and invalid[0].name == "Write" and not calls_of(out)
        assert invalid[0].raw == BROKEN  # to its closing fence, not the one inside the string
        assert out[-1] == "Done."


def test_the_tagged_form_reads_as_hermes_reads_it() -> None:
    answer = 'Sure.\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "b.py"}}\n</tool_call>'
    for pieces in ([answer], list(answer)):
        assert scanned(fenced(), pieces) == scanned(FORMATS["hermes"], pieces)
    assert calls_of(scanned(fenced(), list(answer))) == [("Read", {"file_path": "b.py"})]


@pytest.mark.parametrize("answer", [OURS, BROKEN, "```python\nx = 1\n```", "A.\n" + THEIRS])
def test_the_held_block_reads_what_a_fresh_read_reads_at_every_split(answer: str) -> None:
    fmt = fenced()
    assert isinstance(fmt, FencedHermes)
    afresh = Afresh(fmt)
    for cut in range(1, len(answer)):
        pieces = [answer[:cut], answer[cut:]]
        assert scanned(fmt, pieces) == scanned(afresh, pieces), cut


def test_smollm2_continuing_a_fenced_call_runs_it(smollm_client: Any) -> None:
    """The bundled model, through the one driver: its answer begins with the fenced block (the
    ids a cut answer had produced, `prefix`), the session's reader takes the block as the call
    to the declared tool, the tool runs and its result is in the record."""
    from app.domain.events import ToolsRan, TurnResult
    from app.domain.sampling import Sampling
    from app.engine.local.session import ChatSession
    from app.templates.registry import get_template
    from app.tools.registry import ToolRegistry
    from tests.templates.test_tool_calls_real import square
    from tests.turns import tool_turn

    template = get_template("smollm2").for_model(smollm_client.info.metadata)
    session = ChatSession(smollm_client, template, sampling=Sampling(temperature=0.0), max_tokens=8)
    block = '```json\n{"name": "square", "arguments": {"n": 7}}\n```'
    prefix = tuple(smollm_client.tokenize(block, special=False))
    events = list(tool_turn(session, "What is the square of 7?", ToolRegistry([square]),
                            prefix=prefix, max_calls=1))
    result = events[-1]
    assert isinstance(result, TurnResult), events[-3:]
    assert [r.tool for r in result.records][:1] == ["functions.square"], events[-5:]
    assert result.records[0].outcome.ok and result.records[0].outcome.content == 49
    assert any(isinstance(e, ToolsRan) for e in events)
    assert block not in "".join(m.text for m in session.conversation.messages if m.channel == "final")
