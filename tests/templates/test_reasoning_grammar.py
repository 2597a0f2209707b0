"""The grammars of a turn with tools take the template's own reasoning markup
(`app/templates/reasoning_markup.py`), as its parser does: on the official llama.cpp templates
whose markup is derived (tests/fixtures/llama_templates: Cohere2MoE, Kimi-K3, Apriel, Seed-OSS,
Hy3), a forced call is "reasoning, the close, the call" — the reasoning capped by the thinking
budget, the close never skipped where the prompt opened the block — and what the grammar takes
the template's parser reads as thinking then a call. Markup that is control tokens of the
model's vocabulary is written as those tokens. `templates show` prints the markup beside the
call format line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.domain.events import MessageDone, ParseEvent
from app.domain.messages import Conversation, Message, Role
from app.domain.visibility import Lane
from app.harmony import encoding as enc
from app.templates.base import GrammarRequest
from app.templates.calls.grammar import ThinkBlock
from app.templates.jinja import GgufJinja, jinja_template
from tests.templates.grammar_check import accepts, ids_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = {"get_weather": SCHEMA}
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "The weather.", "parameters": SCHEMA},
    }
]
THOUGHT = "The user wants the weather in Paris.\nI should call the tool."
QUESTION = "What is the weather in Paris?"
# (template, whether its generation prompt opens the block)
DERIVED = [
    ("Cohere2MoE", True),
    ("Kimi-K3", True),
    ("Apriel-1.6-15b-Thinker-fixed", True),
    ("ByteDance-Seed-OSS", False),
    ("tencent-Hy3", False),
]
NAMES = [name for name, _ in DERIVED]
# control tokens of a test vocabulary: o200k_harmony ids reserved for nothing, given the
# spelling of a template's control tokens, as a model of that family has them
RESERVED = {
    "<|START_THINKING|>": 200013,
    "<|END_THINKING|>": 200014,
    "<|open|>": 200015,
    "<|close|>": 200016,
    "<|sep|>": 200017,
}


class ReservedVocab:
    """o200k_harmony with the given spellings made control tokens (b"" in the token table):
    text tokenized with special parsing turns each spelling into its id."""

    def __init__(self, controls: dict[str, int]) -> None:
        self.controls = controls
        self.table = list(enc.load_encoding().token_table)
        for i in controls.values():
            self.table[i] = b""

    @property
    def n_vocab(self) -> int:
        return enc.N_VOCAB

    @property
    def eos_id(self) -> int:
        return enc.RETURN

    @property
    def bos_ids(self) -> list[int]:
        return []

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        plain = enc.load_encoding()._tik.encode_ordinary
        if not special:
            return plain(text)
        out: list[int] = []
        while text:
            hits = [(text.find(c), c) for c in self.controls if c in text]
            if not hits:
                return out + plain(text)
            at, found = min(hits)
            out += [*plain(text[:at]), self.controls[found]]
            text = text[at + len(found) :]
        return out

    def token_table(self) -> Sequence[bytes]:
        return self.table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        spelled = {i: c.encode() for c, i in self.controls.items()}
        return [spelled.get(i, self.table[i]) for i in ids]


@cache
def _template(name: str) -> GgufJinja:
    found = jinja_template((FIXTURES / f"{name}.jinja").read_text(encoding="utf-8"))
    assert isinstance(found, GgufJinja)
    return found


def _call_turn(template: GgufJinja) -> str:
    """The template's own rendering of a past turn that reasons and calls `get_weather`,
    from its reasoning to the end of the call as the call format reads it."""
    fmt = template.call_format()
    assert fmt is not None
    arguments: Any = {"city": "Paris"}
    if template.detection().string_arguments:
        arguments = json.dumps(arguments)
    function = {"name": "get_weather", "arguments": arguments}
    call = {"id": "call_0001", "type": "function", "function": function}
    turn = {"role": "assistant", "content": "", "reasoning_content": THOUGHT}
    full = template.render(
        [{"role": "user", "content": QUESTION}, {**turn, "tool_calls": [call]}],
        OPENAI_TOOLS,
        add_generation_prompt=False,
    )
    text = full[full.index(THOUGHT) :]
    at = min(text.find(t) for t in fmt.triggers if t in text)
    found = fmt.read(text[at:], True)
    assert found is not None and found[0], f"{template.source[:40]!r}: its call is not read"
    compact = json.dumps({"city": "Paris"}, separators=(",", ":"))  # as the grammar writes it
    return text[: at + found[1]].replace(json.dumps({"city": "Paris"}), compact)


def _model_text(template: GgufJinja, thought: str = THOUGHT) -> str:
    """What a model writes after the generation prompt: the block (its open unless the prompt
    wrote it), `thought`, the close, the call."""
    block = template.think_block()
    assert block is not None
    head = "" if block.opened else block.tags[0]
    return head + _call_turn(template).replace(THOUGHT, thought, 1)


def _grammar(
    template: GgufJinja,
    choice: str,
    control: dict[str, int] | None = None,
    budget: int | None = None,
) -> str:
    request = GrammarRequest(
        tools=TOOLS, tool_choice=choice, control=control or {}, thinking_budget=budget
    )
    constraint = template.grammar(request)
    assert constraint is not None
    return constraint.grammar


@pytest.mark.parametrize(("name", "opened"), DERIVED)
def test_the_grammars_take_the_templates_own_reasoning_block(name: str, opened: bool) -> None:
    template = _template(name)
    markup = template.reasoning
    assert markup is not None and template.think_tags == markup.tags
    assert template.think_block() == ThinkBlock(markup.tags, opened)
    assert template.opens_think is opened is markup.prompt_opens


@pytest.mark.parametrize("choice", ["required", "get_weather"])
@pytest.mark.parametrize("name", NAMES)
def test_a_forced_call_is_reasoning_the_close_then_the_call(name: str, choice: str) -> None:
    template = _template(name)
    grammar, text = _grammar(template, choice), _model_text(template)
    assert accepts(grammar, text), text
    close = template.think_tags[1]
    unclosed = text.replace(close, "", 1)  # the call inside the block: the parser's thinking
    assert not accepts(grammar, unclosed)
    after = text[text.index(close) + len(close) :].lstrip()
    # a call straight away: only where the prompt did not open a block
    assert accepts(grammar, after) is not template.opens_think


@pytest.mark.parametrize("name", NAMES)
def test_the_reasoning_before_a_forced_call_keeps_to_the_thinking_budget(name: str) -> None:
    template = _template(name)
    grammar = _grammar(template, "required", budget=40)  # the close's characters count too
    assert accepts(grammar, _model_text(template, "Call the tool."))
    long = " ".join(["The user asks about the weather, so I weigh it again."] * 12)
    assert not accepts(grammar, _model_text(template, long))


@pytest.mark.parametrize("name", [n for n, opened in DERIVED if opened])
def test_auto_and_none_close_a_block_the_prompt_opened(name: str) -> None:
    template = _template(name)
    text, close = _model_text(template), template.think_tags[1]
    answer = text[: text.index(close) + len(close)] + "It is sunny in Paris."
    auto = _grammar(template, "auto")
    assert accepts(auto, text) and accepts(auto, answer)
    none = _grammar(template, "none")
    assert accepts(none, answer) and not accepts(none, text)


def _read(template: GgufJinja, vocab: ReservedVocab, ids: list[int]) -> dict[str, Any]:
    """What the template's parser reads of `ids`, generated after its prompt for QUESTION."""
    conversation = Conversation(messages=(Message.of(Role.USER, QUESTION),))
    template.prompt_ids(conversation, vocab)
    parser = template.output_parser(vocab)
    events: list[ParseEvent] = [e for i in ids for e in parser.feed(i)] + parser.finish()
    done = [e for e in events if isinstance(e, MessageDone)]
    return {
        "calls": [e.message.recipient for e in done if e.lane is Lane.TOOL_CALL],
        "thinking": "".join(e.message.text for e in done if e.lane is Lane.ANALYSIS),
    }


@pytest.mark.parametrize("name", NAMES)
def test_what_the_forced_grammar_takes_the_parser_reads_as_thinking_then_a_call(
    name: str,
) -> None:
    template = _template(name)
    vocab = ReservedVocab({})
    ids = ids_of(_model_text(template))
    assert accepts(_grammar(template, "required"), ids)
    read = _read(template, vocab, ids)
    assert read["calls"] and read["calls"][0].endswith("get_weather")
    assert THOUGHT in read["thinking"]


@pytest.mark.parametrize("name", ["Cohere2MoE", "Kimi-K3"])
def test_reasoning_markup_that_is_control_tokens_is_written_as_those_tokens(name: str) -> None:
    template = _template(name)
    vocab = ReservedVocab(RESERVED)
    control = template.control_markers(vocab)
    close = template.think_tags[1]
    assert {c: RESERVED[c] for c in RESERVED if c in close} == {
        c: i for c, i in control.items() if c in close
    }
    text = _model_text(template)
    # all markup as the model writes it: its control tokens as tokens (Kimi-K3's call markup
    # holds the same `<|open|>`, `<|close|>`, `<|sep|>` as its reasoning markup), the rest
    # spelled out (Cohere2MoE's `<|START_ACTION|>` is no token of this vocabulary)
    as_tokens = vocab.tokenize(text, special=True)
    grammar = _grammar(template, "required", control)
    assert accepts(grammar, as_tokens)
    assert not accepts(grammar, ids_of(text))  # the close spelled in plain characters
    assert accepts(_grammar(template, "auto", control), as_tokens)
    read = _read(template, vocab, as_tokens)
    assert read["calls"] and THOUGHT in read["thinking"]


def _shown(capsys: Any, name: str) -> dict[str, Any]:
    assert main(["templates", "show", name]) == 0
    shown: dict[str, Any] = json.loads(capsys.readouterr().out)
    return shown


@pytest.mark.parametrize("name", NAMES)
def test_templates_show_prints_the_derived_reasoning_markup(capsys: Any, name: str) -> None:
    shown = _shown(capsys, str(FIXTURES / f"{name}.jinja"))
    markup = _template(name).reasoning
    assert markup is not None
    assert shown["reasoning"] == markup.describe()
    assert list(shown).index("reasoning") == list(shown).index("call_format") + 1


def test_templates_show_says_how_other_templates_reason(capsys: Any) -> None:
    assert _shown(capsys, "qwen")["reasoning"].startswith("reasoning: '<think>' … '</think>'")
    assert _shown(capsys, "harmony")["reasoning"].startswith("reasoning: the analysis channel")
    plain = _shown(capsys, str(FIXTURES / "meta-llama-Llama-3.1-8B-Instruct.jinja"))
    assert plain["reasoning"].startswith("no reasoning markup: ")
