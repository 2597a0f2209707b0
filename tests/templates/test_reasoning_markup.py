"""A template's reasoning markup, derived from what the template itself writes
(`app/templates/reasoning_markup.py`), routes a model's reasoning as thinking and its answer as
the answer: on the official llama.cpp templates (tests/fixtures/llama_templates), on templates
of families the app has never seen, through the text parser token by token, with markers that
are control tokens of the model's vocabulary, and with a stray close dropped, never shown."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli.replay_template import ByteTokenizer
from app.domain.events import MessageDone, ParseEvent
from app.domain.messages import Conversation, Message, Role
from app.domain.visibility import Lane
from app.templates.base import Tokenizer
from app.templates.jinja import GgufJinja, jinja_template
from app.templates.jinja_render import render
from app.templates.reasoning_markup import (
    THINK_TAGS,
    ReasoningMarkup,
    reasoning_markup,
    split_reasoning,
)
from app.templates.text_output import TextOutputParser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"
THOUGHT = "First I weigh the question.\nThen I settle on an answer."
ANSWER = "The answer is 42."
QUESTION = "What is six times seven?"
BYTES = [bytes([i]) for i in range(256)]


class ControlVocab:
    """One token per byte, plus control tokens whose table entry is b"" (as llama.cpp gives
    them): text tokenized with special parsing turns each control's spelling into its id."""

    def __init__(self, controls: Sequence[str]) -> None:
        self.controls = list(controls)
        longest = sorted(controls, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(c) for c in longest))

    @property
    def n_vocab(self) -> int:
        return 256 + len(self.controls)

    @property
    def eos_id(self) -> int:
        return -1

    @property
    def bos_ids(self) -> list[int]:
        return []

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        if not special:
            return list(text.encode("utf-8"))
        out: list[int] = []
        at = 0
        for found in self._pattern.finditer(text):
            out += list(text[at : found.start()].encode("utf-8"))
            out.append(256 + self.controls.index(found.group()))
            at = found.end()
        return out + list(text[at:].encode("utf-8"))

    def token_table(self) -> Sequence[bytes]:
        return BYTES + [b""] * len(self.controls)

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.controls[i - 256].encode() if i >= 256 else BYTES[i] for i in ids]


def _source(name: str) -> str:
    return (FIXTURES / f"{name}.jinja").read_text(encoding="utf-8")


def _lanes(events: list[ParseEvent]) -> tuple[str, str]:
    """(all analysis text, all answer text) of a parse."""
    done = [e for e in events if isinstance(e, MessageDone)]
    thought = "".join(e.message.text for e in done if e.lane is Lane.ANALYSIS)
    return thought, "".join(e.message.text for e in done if e.lane is Lane.ANSWER)


def _generate(template: GgufJinja, tokenizer: Tokenizer, text: str) -> tuple[str, str]:
    """What the app shows of `text`, generated after the template's prompt for one question."""
    conversation = Conversation(messages=(Message.of(Role.USER, QUESTION),))
    template.prompt_ids(conversation, tokenizer)
    parser = template.output_parser(tokenizer)
    events: list[ParseEvent] = []
    for token in tokenizer.tokenize(text, special=True):
        events += parser.feed(token)
    return _lanes(events + parser.finish())


@pytest.mark.parametrize(
    ("name", "tags", "prompt_opens"),
    [
        ("Cohere2MoE", ("<|START_THINKING|>", "<|END_THINKING|>"), True),
        ("Kimi-K3", ("<|open|>think<|sep|>", "<|close|>think<|sep|><|open|>response<|sep|>"), True),
        ("deepseek-ai-DeepSeek-V3.2", THINK_TAGS, False),
        (
            "Apriel-1.6-15b-Thinker-fixed",
            ("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"),
            True,
        ),
        ("ByteDance-Seed-OSS", ("<seed:think>", "</seed:think>"), False),
        ("tencent-Hy3", ("<think:opensource>", "</think:opensource>"), False),
    ],
)
def test_the_markup_is_read_from_the_official_template(
    name: str, tags: tuple[str, str], prompt_opens: bool
) -> None:
    found = reasoning_markup(_source(name))
    assert found is not None
    assert (found.tags, found.prompt_opens) == (tags, prompt_opens)
    assert found.describe().startswith(f"reasoning: {tags[0]!r} … {tags[1]!r} (")


@cache
def _turn(source: str) -> str:
    """The text a model writes after the template's generation prompt, as the template writes
    a past turn with reasoning and an answer ("" when it drops the reasoning)."""
    head = [{"role": "user", "content": QUESTION}]
    prompt = render(source, messages=head, add_generation_prompt=True)
    turn = {"role": "assistant", "content": ANSWER, "reasoning_content": THOUGHT}
    full = render(source, messages=[*head, turn], add_generation_prompt=False)
    n = 0
    while n < min(len(prompt), len(full)) and prompt[n] == full[n]:
        n += 1
    return full[n:] if THOUGHT in full[n:] else ""


def _reasoning_templates() -> list[str]:
    """The official templates the app reads with their own derived reasoning markup, whose
    generation prompt lets the model reason (it opens a block, or the turn opens one; not a
    prompt that writes an empty block, as thinking switched off by default does)."""
    names = []
    for path in sorted(FIXTURES.glob("*.jinja")):
        template = jinja_template(path.read_text(encoding="utf-8"))
        if not isinstance(template, GgufJinja) or template.reasoning is None:
            continue
        text, markup = _turn(template.source), template.reasoning
        reasons = markup.prompt_opens or markup.open in text[: max(0, text.find(THOUGHT))]
        if template.think_tags == markup.tags and text and reasons:
            names.append(path.stem)
    return names


def test_the_families_of_the_issue_are_among_them() -> None:
    names = _reasoning_templates()
    assert {"Cohere2MoE", "Kimi-K3", "Apriel-1.6-15b-Thinker-fixed"} <= set(names)
    assert len(names) >= 15


@pytest.mark.parametrize("name", _reasoning_templates())
def test_a_turn_the_template_writes_reads_back(name: str) -> None:
    """The model writes what the template writes for a past turn with reasoning; the app's
    parser, started as the prompt leaves it, shows the answer and hides the reasoning."""
    template = GgufJinja(_source(name))
    thought, answer = _generate(template, ByteTokenizer(), _turn(template.source))
    opening, closing = template.think_tags
    assert thought.strip() == THOUGHT
    assert ANSWER in answer
    assert THOUGHT not in answer and opening not in answer and closing not in answer


def test_control_token_markers_are_read_as_markup() -> None:
    """Cohere's markers are control tokens (no text in the table): the parser reads them."""
    source = _source("Cohere2MoE")
    controls = ["<|START_THINKING|>", "<|END_THINKING|>", "<|START_TEXT|>", "<|END_TEXT|>"]
    controls += ["<|START_OF_TURN_TOKEN|>", "<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"]
    controls += ["<|USER_TOKEN|>", "<|SYSTEM_TOKEN|>"]
    text = f"{THOUGHT}<|END_THINKING|><|START_TEXT|>{ANSWER}<|END_TEXT|>"
    thought, answer = _generate(GgufJinja(source), ControlVocab(controls), text)
    assert (thought, answer) == (THOUGHT, ANSWER)


def test_a_reasoning_prefill_in_plain_words_starts_the_turn_in_thinking() -> None:
    """Apriel's prompt ends with `Here are my reasoning steps:`; the answer follows its marker."""
    template = GgufJinja(_source("Apriel-1.6-15b-Thinker-fixed"))
    text = f"{THOUGHT}\n[BEGIN FINAL RESPONSE]\n{ANSWER}"
    thought, answer = _generate(template, ByteTokenizer(), text)
    assert (thought.strip(), answer.strip()) == (THOUGHT, ANSWER)


UNSEEN = {
    "pipe tags": (
        "{% for m in messages %}<|{{ m.role }}|>"
        "{% if m.reasoning_content %}<|reason|>{{ m.reasoning_content }}<|/reason|>{% endif %}"
        "{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
        ("<|reason|>", "<|/reason|>"),
        False,
    ),
    "brackets, opened by the prompt": (
        "{% for m in messages %}[{{ m.role | upper }}]"
        "{% if m.role == 'assistant' %}[THINK]{{ m.reasoning_content }}[/THINK]{% endif %}"
        "{{ m.content }}[END]{% endfor %}"
        "{% if add_generation_prompt %}[ASSISTANT][THINK]{% endif %}",
        ("[THINK]", "[/THINK]"),
        True,
    ),
    "only when asked to think": (
        "{% for m in messages %}### {{ m.role }}\n"
        "{% if enable_thinking and m.reasoning_content %}<reflection>{{ m.reasoning_content }}"
        "</reflection>\n{% endif %}{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}### assistant\n{% endif %}",
        ("<reflection>", "</reflection>"),
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(UNSEEN))
def test_a_family_never_seen_is_derived(case: str) -> None:
    source, tags, opens = UNSEEN[case]
    found = reasoning_markup(source)
    assert found is not None
    assert (found.tags, found.prompt_opens) == (tags, opens)


NONE = {
    "writes no reasoning": "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}",
    "no marker between reasoning and answer": (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.reasoning_content or '' }}\n"
        "{{ m.content }}{% endfor %}"
    ),
    "reasoning after the answer": (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}"
        "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}"
        "{% endfor %}"
    ),
    "fails to render": "{{ raise_exception('no') }}",
}


@pytest.mark.parametrize("case", sorted(NONE))
def test_a_template_with_no_readable_markup_gets_none(case: str) -> None:
    assert reasoning_markup(NONE[case]) is None
    assert GgufJinja(NONE[case]).think_tags == THINK_TAGS  # as before: `<think>` is still read


def _parse(tags: tuple[str, str], text: str, thinking: bool, cut: int) -> tuple[str, str]:
    """`text` through the text parser in pieces of `cut` bytes (a token each)."""
    data = text.encode("utf-8")
    table = [data[i : i + cut] for i in range(0, len(data), cut)]
    parser = TextOutputParser(table, [], thinking=thinking, think=tags)
    events: list[ParseEvent] = []
    for token in range(len(table)):
        events += parser.feed(token)
    return _lanes(events + parser.finish())


@pytest.mark.parametrize("cut", [1, 3, 100])
def test_a_stray_close_is_dropped_never_shown(cut: int) -> None:
    assert _parse(THINK_TAGS, "</think>\n\nHello</think> there", False, cut) == (
        "",
        "\n\nHello there",
    )
    kimi = ("<|open|>think<|sep|>", "<|close|>think<|sep|><|open|>response<|sep|>")
    text = f"{THOUGHT}{kimi[1]}{ANSWER}{kimi[1]}"
    assert _parse(kimi, text, True, cut) == (THOUGHT, ANSWER)


PIECES = ["<think>", "</think>", "<|r|>", "<|/r|>", "<", "</", "<|", "think>", "a", " b\n", "é"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=14),
    st.sampled_from([THINK_TAGS, ("<|r|>", "<|/r|>")]),
    st.booleans(),
    st.integers(min_value=1, max_value=5),
)
def test_the_parser_routes_as_the_rule_says(
    pieces: list[str], tags: tuple[str, str], thinking: bool, cut: int
) -> None:
    """Token by token, the parser's lanes are `split_reasoning`'s, however the text is cut."""
    text = "".join(pieces)
    assert _parse(tags, text, thinking, cut) == split_reasoning(text, tags, thinking)


def test_the_markup_reads_as_it_says() -> None:
    markup = ReasoningMarkup("<r>", "</r>", found_by="test")
    assert markup.opened_by("prompt <r>\n") and not markup.opened_by("prompt <r></r>")
    assert split_reasoning("a</r>b<r>c</r>d<r>e", markup.tags) == ("ce", "abd")
