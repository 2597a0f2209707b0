"""Functionary v3.2 and Muse Glimmer tool calls: each format reads one call, several calls,
answer text then a call, thinking as thinking, a malformed call as an `E-CALL-SCHEMA` notice
(the text after it still the answer), and holds markers split across two pieces back at every
cut; `detect` picks each for its official template; the grammar accepts the format's own calls
after the generation prompt and refuses junk.

Several cases are ported from llama.cpp's `tests/test-chat.cpp` (the Functionary v3.2 and Muse
Glimmer sections), © the llama.cpp authors, MIT licence (the text is in
tests/fixtures/llama_templates/LICENSE).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.templates.calls.detect import detect
from app.templates.calls.formats import FORMATS
from tests.templates.call_samples import TEMPLATES, detected
from tests.templates.grammar_check import accepts, grammar_of, harmony_controls, weather_schema
from tests.templates.read_back import assert_one_bad_call, read_back


def _check(name: str, text: str, calls: list[Any], answer: str, thinking: str = "") -> None:
    got = read_back(name, text)
    assert got["calls"] == [(f"functions.{n}" if n != "python" else n, a) for n, a in calls]
    assert got["answer"] == answer
    assert got["thinking"] == thinking
    assert got["issues"] == []


W = '{"city": "Paris", "days": 3}'
FUNCTIONARY_CASES = [  # (what the model writes after the prompt's `>>>`, calls, answer)
    ("all\nHello, world!\nWhat's up?", [], "Hello, world!\nWhat's up?"),  # llama.cpp's
    ('special_function\n{"arg1": 1}', [("special_function", {"arg1": 1})], ""),  # llama.cpp's
    (f"get_weather\n{W}", [("get_weather", {"city": "Paris", "days": 3})], ""),
    (
        f'get_weather\n{W}>>>get_time\n{{"zone": "CET"}}',
        [("get_weather", {"city": "Paris", "days": 3}), ("get_time", {"zone": "CET"})],
        "",
    ),
    (
        f"all\nLet me check.>>>get_weather\n{W}",
        [("get_weather", {"city": "Paris", "days": 3})],
        "Let me check.",
    ),
    # an answer after the call; a string may hold braces, quotes and `>>>`
    (
        'f\n{"s": "a}{\\">>>b"}>>>all\nDone.',
        [("f", {"s": 'a}{">>>b'})],
        "Done.",
    ),
    ("python\nprint(1 + 1)\n", [("python", {"code": "print(1 + 1)"})], ""),  # code, not JSON
    ("all\n", [], ""),
    ("", [], ""),
]

MARKUP = (
    '<atem:function_calls>\n<atem:invoke name="special_function">\n'
    '<atem:parameter name="arg1">1</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
)
WEATHER = (
    '<atem:function_calls>\n<atem:invoke name="get_weather">\n'
    '<atem:parameter name="city">Paris, France</atem:parameter>\n'
    '<atem:parameter name="days">3</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
)
SPECIAL = [("special_function", {"arg1": 1})]
MUSE_CASES = [  # (what the model writes after the prompt's `<|start|>assistant`, …)
    (" to=user<|message|>Hello, world!\nWhat's up?<|eot|>", [], "Hello, world!\nWhat's up?", ""),
    (" to=special_function<|message|>" + MARKUP, SPECIAL, "", ""),
    (  # inform, then act: the answer ends at `<|eom|>`
        " to=user<|message|>Hello, world!\nWhat's up?<|eom|><|start|>assistant"
        " to=special_function<|message|>" + MARKUP,
        SPECIAL,
        "Hello, world!\nWhat's up?",
        "",
    ),
    (  # markup quoted in an answer, with no header before it, stays text
        " to=user<|message|>You invoke it like this:\n" + MARKUP + "<|eot|>",
        [],
        "You invoke it like this:\n" + MARKUP,
        "",
    ),
    (  # markup inside the message to `self` is thinking, not a call
        " to=self<|message|>I could use " + MARKUP + " here<|eom|>"
        "<|start|>assistant to=user<|message|>Hello!<|eot|>",
        [],
        "Hello!",
        "I could use " + MARKUP + " here",
    ),
    (
        " to=self<|message|>Weather first.<|eom|><|start|>assistant to=get_weather<|message|>"
        + WEATHER
        + "<|eom|><|start|>assistant to=special_function<|message|>"
        + MARKUP,
        [("get_weather", {"city": "Paris, France", "days": 3}), *SPECIAL],
        "",
        "Weather first.",
    ),
    (  # two invokes in one block, and values of every shape
        ' to=f<|message|><atem:function_calls>\n<atem:invoke name="f">\n'
        '<atem:parameter name="a">true</atem:parameter>\n'
        '<atem:parameter name="b">[1, "x"]</atem:parameter>\n'
        '<atem:parameter name="c">two\nlines </atem:parameter>\n</atem:invoke>\n'
        '<atem:invoke name="g">\n</atem:invoke>\n</atem:function_calls>',
        [("f", {"a": True, "b": [1, "x"], "c": "two\nlines "}), ("g", {})],
        "",
        "",
    ),
    (' to=f<|message|>{"a": 1}', [("f", {"a": 1})], "", ""),  # a JSON message
    (
        ' to=f<|message|><atem:function_calls>\n<atem:invoke name="f">\n</atem:invoke>\n',
        [("f", {})],
        "",
        "",
    ),
]


@pytest.mark.parametrize(("text", "calls", "answer"), FUNCTIONARY_CASES)
def test_functionary_reads_its_calls(text: str, calls: list[Any], answer: str) -> None:
    _check("functionary", text, calls, answer)


@pytest.mark.parametrize(("text", "calls", "answer", "thinking"), MUSE_CASES)
def test_muse_reads_its_calls(text: str, calls: list[Any], answer: str, thinking: str) -> None:
    _check("muse", text, calls, answer, thinking)


@pytest.mark.parametrize(
    ("name", "text", "tool"),
    [
        ("functionary", 'all\nSure.>>>get_weather\n{"city": }>>>all\nAfter.', "get_weather"),
        ("functionary", "all\nSure.>>>get_weather\nParis, please>>>all\nAfter.", "get_weather"),
        ("functionary", "all\nSure.>>> print(1)\nAfter.", ""),
        (
            "muse",
            " to=user<|message|>Sure.<|eom|><|start|>assistant to=f<|message|>oops<|eom|>"
            "<|start|>assistant to=user<|message|>After.",
            "f",
        ),
        (
            "muse",
            " to=user<|message|>Sure.<|eom|><|start|>assistant to=f<|message|><atem:function_calls>"
            '\n<atem:invoke name="f">\nstray\n</atem:invoke>\n</atem:function_calls>'
            "<|eom|><|start|>assistant to=user<|message|>After.",
            "f",
        ),
        (
            "muse",
            " to=user<|message|>Sure.<|start|>user<|message|>Hi<|eom|>"
            "<|start|>assistant to=user<|message|>After.",
            "",
        ),
    ],
)
def test_a_malformed_call_is_a_notice_never_dropped(name: str, text: str, tool: str) -> None:
    got = read_back(name, text)
    assert_one_bad_call(got, tool)
    assert got["answer"].startswith("Sure.") and got["answer"].endswith("After.")


@pytest.mark.parametrize(
    ("name", "text", "tool"),
    [
        ("functionary", 'all\nSure.>>>get_weather\n{"city": "Par', "get_weather"),
        ("functionary", "all\nSure.>>>get_weather", "get_weather"),
        (
            "muse",
            " to=user<|message|>Sure.<|eom|><|start|>assistant to=get_weather<|message|>"
            + WEATHER[:70],
            "get_weather",
        ),
    ],
)
def test_a_call_cut_off_by_the_end_of_the_answer_is_a_notice(
    name: str, text: str, tool: str
) -> None:
    got = read_back(name, text)
    assert got["answer"] == "Sure."
    assert_one_bad_call(got, tool)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("functionary", 'all\nSure.>>>get_time\n{"city": "Oslo"}'),
        (
            "muse",
            " to=user<|message|>Sure.<|eom|><|start|>assistant to=get_time<|message|>"
            '<atem:function_calls>\n<atem:invoke name="get_time">\n'
            '<atem:parameter name="city">Oslo</atem:parameter>\n</atem:invoke>\n'
            "</atem:function_calls><|eot|>",
        ),
    ],
)
def test_split_markers_are_held_back_at_every_cut(name: str, text: str) -> None:
    """Fed in two pieces cut anywhere (inside every marker), no markup reaches the answer."""
    for cut in range(len(text) + 1):
        got = read_back(name, text[:cut], text[cut:])
        assert got["answer"] == "Sure.", cut
        assert got["calls"] == [("functions.get_time", {"city": "Oslo"})], cut
        assert got["issues"] == [], cut


@pytest.mark.parametrize(
    ("template", "name", "string_arguments"),
    [("meetkai-functionary-medium-v3.2", "functionary", True), ("muse-glimmer", "muse", False)],
)
def test_detect_picks_the_format_for_its_template(
    template: str, name: str, string_arguments: bool
) -> None:
    found = detected(template, name)
    assert found.string_arguments is string_arguments  # Functionary's takes arguments as text


def test_no_other_official_template_is_taken_for_either() -> None:
    for path in sorted(TEMPLATES.glob("*.jinja")):
        if path.stem in ("meetkai-functionary-medium-v3.2", "muse-glimmer"):
            continue
        found = detect(path.read_text(encoding="utf-8")).format
        assert found is None or found.name not in ("functionary", "muse"), path.stem


# --- grammars ------------------------------------------------------------------------------


SCHEMA = weather_schema()
TOOLS: dict[str, Any] = {"get_weather": SCHEMA, "other": None}


def _grammar(name: str, choice: str) -> str:
    """The constraint's grammar; markers that are o200k_harmony special tokens (Muse's
    `<|start|>` and `<|message|>`) are control tokens, as in a model whose vocabulary has them."""
    return grammar_of(FORMATS[name], TOOLS, choice, harmony_controls(FORMATS[name]))


FN_CALL = 'get_weather\n{"city":"Oslo","days":3}'


@pytest.mark.parametrize(
    ("choice", "text", "ok"),
    [
        ("required", FN_CALL, True),
        ("required", FN_CALL + '>>>other\n{"x":[1]}', True),
        ("required", ">>>" + FN_CALL, False),  # the prompt wrote the first `>>>`
        ("required", 'get_weather\n{"city":"Oslo","days":"3"}', False),  # not an integer
        ("required", 'get_weather\n{"unit":"k"}', False),  # not one of the enum's values
        ("required", 'nope\n{"x":1}', False),
        ("required", "all\nJust text.", False),
        ("auto", "all\nLet me look.>>>" + FN_CALL, True),
        ("auto", FN_CALL + ">>>all\nIt is sunny.", True),  # `>>>all` hands back to text
        ("auto", "all\nLet me look.>>>nope\n{}", False),
        ("auto", "Just text.", False),  # the answer begins with its recipient
        ("none", "all\nJust text.", True),
        ("none", "all\nJust text.>>>" + FN_CALL, False),
        ("none", FN_CALL, False),
    ],
)
def test_functionary_grammar(choice: str, text: str, ok: bool) -> None:
    assert accepts(_grammar("functionary", choice), text) is ok


MUSE_CALL = (
    ' to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">\n'
    '<atem:parameter name="days">3</atem:parameter>\n'
    '<atem:parameter name="city">Oslo </atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
)
THINK = " to=self<|message|>The weather, then.<|eom|><|start|>assistant"


@pytest.mark.parametrize(
    ("choice", "text", "ok"),
    [
        ("required", MUSE_CALL, True),
        ("required", THINK + MUSE_CALL, True),  # thinking before the call
        ("required", MUSE_CALL + "<|eom|><|start|>assistant" + MUSE_CALL, True),
        ("required", MUSE_CALL.replace(">3<", ">three<"), False),  # not an integer
        ("required", MUSE_CALL.replace('name="days"', 'name="day"'), False),  # no such key
        ("required", MUSE_CALL.replace("get_weather", "nope"), False),
        ("required", " to=user<|message|>Just text.", False),
        ("auto", " to=user<|message|>Just text.", True),
        ("auto", THINK + " to=user<|message|>Just text.", True),
        ("auto", " to=user<|message|>Let me look.<|start|>assistant" + MUSE_CALL, True),
        ("auto", MUSE_CALL.replace("get_weather", "nope"), False),
        ("none", THINK + " to=user<|message|>Just text.", True),
        ("none", MUSE_CALL, False),
    ],
)
def test_muse_grammar(choice: str, text: str, ok: bool) -> None:
    assert accepts(_grammar("muse", choice), text) is ok
