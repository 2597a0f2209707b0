"""Kimi-K3's markup as control tokens: its official template (tests/fixtures/llama_templates)
writes its reasoning and its calls with the same `<|open|>`, `<|close|>` and `<|sep|>`, which a
Kimi model's vocabulary holds as control tokens. Its turn's end (`<|close|>message<|sep|>…`)
begins with one of them too, so taking the first control token after an answer for the end of
turn stopped every generation at the close of its reasoning: the parser read no call. These
tests feed the template's own call turns through the real `TextOutputParser`, once with the
markup as control tokens and once spelled out in plain characters, and check both read the
same calls, and that the stop ids keep to the real end of turn.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from app.domain.events import MessageDone
from app.domain.messages import Conversation, Message, Role
from app.domain.visibility import Lane
from app.templates.jinja import GgufJinja, jinja_template
from tests.templates.grammar_check import ids_of
from tests.templates.test_reasoning_grammar import RESERVED, ReservedVocab

TEMPLATE = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates" / "Kimi-K3.jinja"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"type": "function", "function": {"name": n, "description": "", "parameters": SCHEMA}}
    for n in ("get_weather", "get_time")
]
QUESTION = "What is the weather and the time in Paris and Rome?"
THOUGHT = "The user asks two things.\nI should call the tools."
MARKUP = ("<|open|>", "<|close|>", "<|sep|>")  # the units its reasoning markup holds
CALLS = [
    [("get_weather", "Paris")],
    [("get_weather", "Paris"), ("get_time", "Rome")],
]


@cache
def _template() -> GgufJinja:
    found = jinja_template(TEMPLATE.read_text(encoding="utf-8"))
    assert isinstance(found, GgufJinja)
    return found


def _generated(template: GgufJinja, calls: list[tuple[str, str]]) -> str:
    """What the template writes after its generation prompt for a turn that reasons, then
    makes `calls` (name, city): the model's text, as it would generate it."""
    strings = template.detection().string_arguments
    head = [{"role": "user", "content": QUESTION}]
    written = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": json.dumps({"city": city}) if strings else {"city": city},
            },
        }
        for i, (name, city) in enumerate(calls)
    ]
    turn = {"role": "assistant", "content": "", "reasoning_content": THOUGHT, "tool_calls": written}
    prompt = template.render(head, TOOLS, add_generation_prompt=True)
    full = template.render([*head, turn], TOOLS, add_generation_prompt=False)
    assert full.startswith(prompt), "the turn does not continue the generation prompt"
    return full[len(prompt) :]


def _read(template: GgufJinja, vocab: ReservedVocab, ids: list[int]) -> dict[str, Any]:
    """The calls (recipient, arguments) and the thinking the template's parser reads of `ids`,
    generated after its prompt for QUESTION."""
    conversation = Conversation(messages=(Message.of(Role.USER, QUESTION),))
    template.prompt_ids(conversation, vocab)
    parser = template.output_parser(vocab)
    events = [e for i in ids for e in parser.feed(i)] + parser.finish()
    done = [e for e in events if isinstance(e, MessageDone)]
    calls = [(e.message.recipient, e.message.text) for e in done if e.lane is Lane.TOOL_CALL]
    thinking = "".join(e.message.text for e in done if e.lane is Lane.ANALYSIS)
    return {"calls": calls, "thinking": thinking}


@pytest.mark.parametrize("calls", CALLS, ids=["one call", "two calls"])
def test_a_call_as_control_tokens_reads_as_the_same_call_spelled_out(
    calls: list[tuple[str, str]],
) -> None:
    template = _template()
    text = _generated(template, calls)
    vocab = ReservedVocab(RESERVED)
    as_tokens = vocab.tokenize(text, special=True)
    held = [i for i in as_tokens if i in RESERVED.values()]
    assert {RESERVED[m] for m in MARKUP} <= set(held)  # the markup did arrive as tokens
    tokens = _read(template, vocab, as_tokens)
    plain = _read(template, ReservedVocab({}), ids_of(text))
    assert tokens == plain
    wanted = [(f"functions.{name}", {"city": city}) for name, city in calls]
    assert [(r, json.loads(a)) for r, a in tokens["calls"]] == wanted
    assert THOUGHT in tokens["thinking"]


def test_the_reasoning_markups_control_tokens_are_never_a_stop() -> None:
    template = _template()
    stops = template.stop_ids(ReservedVocab(RESERVED))
    assert not set(stops) & {RESERVED[m] for m in MARKUP}
    assert stops == [ReservedVocab(RESERVED).eos_id]


def test_the_end_of_turn_after_the_markup_is_still_a_stop() -> None:
    """Where the vocabulary has `<|end_of_msg|>` as a control token too, it ends the turn:
    the first control token after an answer that the reasoning markup does not write."""
    end = 200018
    vocab = ReservedVocab({**RESERVED, "<|end_of_msg|>": end})
    stops = _template().stop_ids(vocab)
    assert end in stops
    assert not set(stops) & {RESERVED[m] for m in MARKUP}
