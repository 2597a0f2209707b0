"""The learned call format on templates the app has never seen: small chat templates written
here, each a made-up family with its own markup — JSON arguments with a call index, XML tags
named after each argument, `key=value` arguments with quoted strings, a pythonic call list —
are learned from their renderings alone (`detect(..., families=False)`), say how sure they are,
and keep the reader's promises (text before a call stays answer text, several calls are read,
a call inside a think block stays thinking, split markers are held back, a malformed call is an
`E-CALL-SCHEMA` notice, never dropped). A template whose calls have no markup, or whose learned
markup does not read its own probes back, gets no format and says why. The learned grammar of
every official template the learner reads compiles and holds a call's name to the tools.
`harmony-desk templates show FILE.jinja` prints what was learned.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, cast

import pytest

from app.cli import main
from app.cli.replay_template import replay_text
from app.domain.events import ContentDelta, ParseIssue
from app.domain.visibility import Lane
from app.errors import ErrorCode
from app.templates.calls.derived import DerivedFormat
from app.templates.calls.detect import Detection, detect
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.learn import tail, think_tags
from app.templates.calls.learned import LearnedPythonic
from app.templates.calls.markup import HOLE
from app.templates.jinja import GgufJinja
from app.templates.text_output import TextOutputParser
from tests.templates.call_samples import at_start, said
from tests.templates.grammar_check import accepts, grammar_of, harmony_controls
from tests.templates.test_learned_corpus import LEARN_LEFT_OUT
from tests.templates.test_template_corpus import FIXTURES, TOOLS, _templates

TURNS = """{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.role == 'tool' -%}RESULT{%- elif m.tool_calls -%}{{ m.content }}CALLS
{%- else -%}{{ m.content }}{%- endif -%}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif -%}"""
RESULT = "<|result|>{{ m.content }}"
ORBIT = (
    '<|calls|>[{% for c in m.tool_calls %}{% if not loop.first %}, {% endif %}{"n": {{ loop.index0 }},'
    ' "fn": "{{ c.function.name }}", "with": {{ c.function.arguments | tojson }}}{% endfor %}]<|/calls|>'
)
TAGS = (
    "{% for c in m.tool_calls %}<invoke:{{ c.function.name }}>{% for k, v in c.function.arguments.items() %}"
    "<{{ k }}>{{ v }}</{{ k }}>{% endfor %}</invoke>{% endfor %}"
)
KEYED = (
    "{% for c in m.tool_calls %}[[{{ c.function.name }}|{% for k, v in c.function.arguments.items() %}"
    "{% if not loop.first %};{% endif %}{{ k }}={% if v is string %}'{{ v }}'{% else %}{{ v }}{% endif %}"
    "{% endfor %}]]{% endfor %}"
)
PYTHONIC = (
    "<|py|>[{% for c in m.tool_calls %}{% if not loop.first %}, {% endif %}{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %}, {% endif %}"
    "{% endfor %}){% endfor %}]<|/py|>"
)
BARE = "{% for c in m.tool_calls %}{{ c.function.name }} {{ c.function.arguments | tojson }}{% endfor %}"
FIRST_ONLY = ORBIT.replace("m.tool_calls %}", "m.tool_calls[:1] %}")


def _template(calls: str, result: str = RESULT) -> str:
    return TURNS.replace("CALLS", calls).replace("RESULT", result)


def _learned(calls: str, result: str = RESULT) -> Detection:
    return detect(_template(calls, result), families=False)


WEATHER = {"city": "Paris, France", "days": 3}
FAMILIES = {  # the family, and a turn in which it calls get_weather then get_time
    "orbit": (
        ORBIT,
        '<|calls|>[{"n": 0, "fn": "get_weather", "with": {"city": "Paris, France", "days": 3}},'
        ' {"n": 1, "fn": "get_time", "with": {"zone": "CET"}}]<|/calls|>',
    ),
    "tags": (
        TAGS,
        "<invoke:get_weather><city>Paris, France</city><days>3</days></invoke>"
        "<invoke:get_time><zone>CET</zone></invoke>",
    ),
    "keyed": (KEYED, "[[get_weather|city='Paris, France';days=3]][[get_time|zone='CET']]"),
    "pythonic": (
        PYTHONIC,
        '<|py|>[get_weather(city="Paris, France", days=3), get_time(zone="CET")]<|/py|>',
    ),
}
BOTH = [("get_weather", WEATHER), ("get_time", {"zone": "CET"})]


def _read(
    fmt: CallFormat, text: str, *, step: int = 1
) -> tuple[str, list[tuple[str, Any]], list[ParseIssue], str, str]:
    """(answer, calls, issues, the answer as it streamed, reasoning) of `text` fed `step`
    bytes at a time."""
    table = [bytes([i]) for i in range(256)]
    parser = TextOutputParser(table, [], fmt, thinking=False)
    data = text.encode()
    events = [
        e for i in range(0, len(data), step) for b in data[i : i + step] for e in parser.feed(b)
    ]
    events += parser.finish()
    answer = "".join(m.text for m in parser.messages if m.channel == "final" and not m.recipient)
    thought = "".join(m.text for m in parser.messages if m.channel == "analysis")
    calls = [
        (m.recipient.removeprefix("functions."), json.loads(m.text))
        for m in parser.messages
        if m.recipient
    ]
    streamed = "".join(
        e.text for e in events if isinstance(e, ContentDelta) and e.lane is Lane.ANSWER
    )
    return answer, calls, [e for e in events if isinstance(e, ParseIssue)], streamed, thought


@pytest.mark.parametrize("family", FAMILIES)
def test_a_new_familys_calls_are_learned_with_full_confidence(family: str) -> None:
    found = _learned(FAMILIES[family][0])
    assert found.format is not None, found.reason
    assert found.format.name == "derived" and found.learned is not None
    assert found.learned.confidence == "high", found.learned.describe()
    assert found.learned.checked == (
        "one call",
        "two arguments",
        "a number",
        "two calls",
        "prose then a call",
        "a tool result",
    )
    line = found.describe()
    assert (
        line.startswith("learned: markers `")
        and ", arguments " in line
        and ", confidence high" in line
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_a_learned_format_reads_prose_then_several_calls_byte_by_byte(family: str) -> None:
    fmt = _learned(FAMILIES[family][0]).format
    assert fmt is not None
    answer, calls, issues, streamed, _ = _read(fmt, "Let me look. " + FAMILIES[family][1])
    assert (answer.strip(), calls, issues) == ("Let me look.", BOTH, [])
    assert streamed == answer  # the markup was held back, never shown and taken back


@pytest.mark.parametrize("family", FAMILIES)
def test_a_learned_format_reads_the_same_in_any_pieces(family: str) -> None:
    fmt = _learned(FAMILIES[family][0]).format
    assert fmt is not None
    text = "Sure. " + FAMILIES[family][1]
    whole = _read(fmt, text, step=len(text.encode()))
    for step in (2, 3, 7):
        assert _read(fmt, text, step=step)[:4] == whole[:4]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_call_inside_a_think_block_stays_thinking(family: str) -> None:
    fmt = _learned(FAMILIES[family][0]).format
    assert fmt is not None
    answer, calls, issues, _, thought = _read(
        fmt, f"<think>Maybe {FAMILIES[family][1]}</think>No call needed."
    )
    assert (answer, calls, issues) == ("No call needed.", [], [])
    assert FAMILIES[family][1] in thought


@pytest.mark.parametrize(("family", "broken"), [
    ("orbit", '<|calls|>[{"n": 0, "fn": "get_weather", "with": {"city": }}]<|/calls|>'),
    ("tags", "<invoke:get_weather><city>Paris</invoke>"),
    ("keyed", "[[get_weather|city='Paris]]"),
    ("pythonic", "<|py|>[get_weather(city=open('/etc/passwd'))]<|/py|>"),
])  # fmt: skip
def test_a_malformed_call_is_a_notice_never_dropped(family: str, broken: str) -> None:
    fmt = _learned(FAMILIES[family][0]).format
    assert fmt is not None
    answer, calls, issues, _, _ = _read(fmt, "Trying. " + broken)
    assert calls == [] and answer.strip() == "Trying."
    assert [i.code for i in issues] == [ErrorCode.CALL_SCHEMA]
    assert broken[:12] in issues[0].message  # what the model wrote is shown, not lost


def test_argument_encodings_are_learned_and_said() -> None:
    said = {f: _learned(calls).learned for f, (calls, _) in FAMILIES.items()}
    assert said["orbit"] is not None and said["orbit"].arguments == "a JSON object"
    assert (
        said["tags"] is not None
        and said["tags"].arguments == "one per argument, `<KEY>VALUE</KEY>`"
    )
    assert said["keyed"] is not None
    assert (
        said["keyed"].arguments
        == "one per argument, `KEY='VALUE'` separated by `;` (strings quoted `'`)"
    )
    assert said["pythonic"] is not None and said["pythonic"].arguments.startswith("pythonic")
    assert isinstance(_learned(PYTHONIC).format, LearnedPythonic)
    assert said["orbit"].markers == ("<|calls|>[", "]<|/calls|>")


def test_a_call_index_is_a_hole_so_a_third_call_reads() -> None:
    fmt = _learned(ORBIT).format
    assert isinstance(fmt, DerivedFormat)
    three = '<|calls|>[{"n": 0, "fn": "a", "with": {}}, {"n": 1, "fn": "b", "with": {}}, {"n": 2, "fn": "c", "with": {"x": 1}}]<|/calls|>'
    assert _read(fmt, three)[1:3] == ([("a", {}), ("b", {}), ("c", {"x": 1})], [])


@pytest.mark.parametrize(("opening", "tags"), [
    ("<think>\n\n</think>\n\n", ("<think>", "</think>")),
    ("<|channel>thought\n<channel|>", ("<|channel>thought", "<channel|>")),  # Gemma 4
    ("</mm:think>", ("<mm:think>", "</mm:think>")),  # MiniMax-M3: the close alone
    ("", ("<think>", "</think>")),
    ("Here are my reasoning steps:\n", ("<think>", "</think>")),  # words, not tags
])  # fmt: skip
def test_think_tags_are_learned_from_how_a_turn_opens(opening: str, tags: tuple[str, str]) -> None:
    assert think_tags(opening) == tags


def test_the_markup_two_calls_share_takes_a_differing_index_as_a_hole() -> None:
    a = '<|act|>[{"id": "0", "name": "'
    b = '}, {"id": "1", "name": "'
    text, in_a, in_b = tail(a, b)
    assert text == f'{{"id": "{HOLE}", "name": "' and a[len(a) - in_a :] == '{"id": "0", "name": "'
    assert b[len(b) - in_b :] == '{"id": "1", "name": "'
    assert tail("<a><tool x=1>", "<b><tool x=1>")[0] == "<tool x=1>"  # never cut inside a tag


def test_one_call_a_turn_and_a_dropped_result_lower_the_confidence() -> None:
    one_a_turn = _learned(FIRST_ONLY)
    assert one_a_turn.learned is not None and one_a_turn.learned.confidence == "medium"
    assert ("two calls", "the template writes one call a turn") in one_a_turn.learned.unchecked
    no_result = _learned(ORBIT, result="")
    assert no_result.learned is not None and no_result.learned.confidence == "low"
    assert (
        "not read back: a tool result (the template drops a tool's result)" in no_result.describe()
    )


def test_a_template_with_no_call_markup_gets_no_format_and_says_why() -> None:
    found = _learned(BARE)
    assert found.format is None
    assert (
        found.describe()
        == "no tool-call format: the template writes a call with no markup before it"
    )
    template = GgufJinja(_template(BARE))  # the families do not read it either: no tools
    assert template.tool_calls is None and template.call_format() is None


def test_markup_that_does_not_read_its_own_probes_back_is_never_used() -> None:
    # the markup holds how many arguments a call has: learned from one, it reads no other
    counted = (
        "{% for c in m.tool_calls %}<call>{{ c.function.name }}#{{ c.function.arguments | length }}"
        "{{ c.function.arguments | tojson }}</call>{% endfor %}"
    )
    found = _learned(counted)
    assert found.format is None and found.learned is None
    assert found.describe() == (
        "no tool-call format: the markup learned from the template does not read its own calls back"
    )


def test_the_families_are_still_found_first_and_the_learned_one_beside_them() -> None:
    source = (FIXTURES / "Qwen3-Coder.jinja").read_text(encoding="utf-8")
    assert detect(source).format is not None and detect(source).format.name == "qwen3-coder"  # type: ignore[union-attr]
    learned = detect(source, families=False)
    assert isinstance(learned.format, DerivedFormat) and learned.learned is not None
    assert detect(source).learned is None


GRAMMAR_TOOLS = {t["function"]["name"]: t["function"]["parameters"] for t in cast(Any, TOOLS)}


@pytest.mark.parametrize("name", [n for n in _templates() if n not in LEARN_LEFT_OUT])
def test_each_learned_official_format_has_a_grammar_that_holds_the_name(name: str) -> None:
    fmt = detect((FIXTURES / f"{name}.jinja").read_text(encoding="utf-8"), families=False).format
    assert fmt is not None
    grammar = grammar_of(fmt, GRAMMAR_TOOLS, "required", harmony_controls(fmt))
    call = at_start(fmt, [ToolCall("get_weather", '{"city":"Paris","days":3}')])
    assert accepts(grammar, call), call
    assert not accepts(grammar, call.replace("get_weather", "get_wether"))
    auto = grammar_of(fmt, GRAMMAR_TOOLS, "auto", harmony_controls(fmt))
    assert accepts(auto, said(fmt, "Just text."))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_learned_grammar_writes_the_familys_own_calls(family: str) -> None:
    fmt = _learned(FAMILIES[family][0]).format
    assert fmt is not None
    grammar = grammar_of(fmt, GRAMMAR_TOOLS, "required")
    one = FAMILIES[family][1].split("<invoke:get_time>")[0].split("[[get_time")[0]
    if family in ("orbit", "pythonic"):
        one = "".join(
            p.text
            for p in fmt.write([ToolCall("get_weather", '{"city":"Paris, France","days":3}')])
        )
    assert accepts(grammar, one), one
    assert not accepts(grammar, one.replace("3", "three"))  # days is an integer


def test_templates_show_says_what_was_learned(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "orbit.jinja"
    path.write_text(_template(ORBIT), encoding="utf-8")
    assert main(["templates", "show", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["tool_calls"] == "derived" and shown["source"] == str(path)
    assert shown["call_format"].startswith(
        "learned: markers `<|calls|>[` … `]<|/calls|>`, arguments a JSON object,"
    )
    assert "confidence high" in shown["call_format"]
    bare = tmp_path / "bare.jinja"
    bare.write_text(_template(BARE), encoding="utf-8")
    assert main(["templates", "show", str(bare)]) == 0
    assert json.loads(capsys.readouterr().out)["call_format"].startswith("no tool-call format: ")


def test_templates_show_names_a_family_and_learns_on_request(capsys: Any) -> None:
    path = str(FIXTURES / "google-gemma-4-31B-it.jinja")
    assert main(["templates", "show", path]) == 0
    assert json.loads(capsys.readouterr().out)["call_format"] == "format: gemma4"
    assert main(["templates", "show", path, "--learned"]) == 0
    line = json.loads(capsys.readouterr().out)["call_format"]
    assert line.startswith("learned: markers `<|tool_call>call:` … `}<tool_call|>`")
    assert 'arguments one per argument, `KEY:<|"|>VALUE<|"|>` separated by `,`' in line


def test_replay_reads_a_new_family_through_its_template_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = tmp_path / "tags.jinja"
    path.write_text(_template(TAGS), encoding="utf-8")
    line = json.dumps({"text": "On it. " + FAMILIES["tags"][1], "tools": TOOLS}) + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(line))
    assert main(["replay", "--template", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    got = [
        (s["recipient"], json.loads(s["text"])) for s in out["shown"] if s["lane"] == "tool_call"
    ]
    assert got == [(f"functions.{n}", a) for n, a in BOTH] and out["errors"] == []
    assert (
        replay_text(GgufJinja(_template(TAGS)), {"text": "Plain."})["shown"][0]["text"] == "Plain."
    )
