"""Every case of the research catalogue (W01–W39): what the user sees and which codes arise.

Inputs are written as token text; `<|...|>` spellings become the special ids, everything
else ordinary tokens; text between ⟦ and ⟧ is ordinary tokens even where it spells a marker
(what a model writes when it spells markup as text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from app.domain.events import ContentDelta, MessageDone, StopReason
from app.domain.visibility import Lane
from app.errors import ErrorCode
from app.harmony.encoding import HarmonyEncoding
from app.harmony.parser import StreamParser, parse_tokens

TOOLS = {"functions.get_weather", "functions.f", "functions.grep", "functions.shell",
         "functions.bash", "functions.search", "functions.done", "functions.read",
         "functions.manage_cart", "functions.get_ecs_instructions", "functions.generate_file"}


@dataclass
class Case:
    wild: str
    answer: str | None = None  # the visible answer text, or None for none
    calls: list[tuple[str, str]] = field(default_factory=list)  # (recipient, body)
    codes: set[ErrorCode] = field(default_factory=set)  # codes that must appear
    stop: StopReason | None = None
    hidden: list[str] = field(default_factory=list)  # texts that must not be visible


CASES: dict[str, Case] = {
    "W01_recipient_in_role_header": Case(
        ' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"location":"Tokyo"}<|call|>',
        calls=[("functions.get_weather", '{"location":"Tokyo"}')], stop=StopReason.CALL),
    "W02a_canonical_constrain": Case(
        '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a":1}<|call|>',
        calls=[("functions.f", '{"a":1}')], stop=StopReason.CALL),
    "W02b_bare_json": Case(
        '<|channel|>commentary to=functions.f json<|message|>{"a":1}<|call|>',
        calls=[("functions.f", '{"a":1}')], stop=StopReason.CALL),
    "W02c_glued_constrain": Case(
        '<|channel|>commentary to=functions.f<|constrain|>json<|message|>{"a":1}<|call|>',
        calls=[("functions.f", '{"a":1}')], stop=StopReason.CALL),
    "W02d_code_type_on_analysis": Case(
        '<|channel|>analysis to=functions.grep code<|message|>{"pattern":"foo"}<|call|>',
        calls=[("functions.grep", '{"pattern":"foo"}')], stop=StopReason.CALL),
    "W02e_glued_json_name": Case(
        '<|channel|>commentary to=functions.shelljson<|message|>{"cmd":"ls"}<|call|>',
        calls=[("functions.shell", '{"cmd":"ls"}')], stop=StopReason.CALL),
    "W03_call_on_analysis": Case(
        '<|channel|>analysis<|message|>We need to run grep.\n<|end|><|start|>assistant<|channel|>analysis to=functions.grep code<|message|>\n{"pattern":"x"}<|call|>',
        calls=[("functions.grep", '\n{"pattern":"x"}')], stop=StopReason.CALL, hidden=["We need to run grep."]),
    "W04_undeclared_builtin": Case(
        "<|channel|>analysis<|message|>We can execute python.<|end|><|start|>assistant<|channel|>analysis to=python code<|message|>print('hello')<|call|>",
        calls=[("python", "print('hello')")], codes={ErrorCode.CALL_SCHEMA}, stop=StopReason.CALL),
    "W05_bare_function_name": Case(
        '<|channel|>commentary to=get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
        calls=[("functions.get_weather", '{"city":"Paris"}')], stop=StopReason.CALL),
    "W06_control_tokens_in_header": Case(
        '<|start|>assistant<|channel|>bash<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{"cmd":"ls"}<|call|>',
        calls=[("functions.bash", '{"cmd":"ls"}')], codes={ErrorCode.PARSE_HEADER}, stop=StopReason.CALL),
    "W06b_channel_glued_to_name": Case(
        '<|channel|>commentary to=functions.manage_cart<|channel|>commentary <|constrain|>json<|message|>{}<|call|>',
        calls=[("functions.manage_cart", "{}")], stop=StopReason.CALL),
    "W07_duplicated_to": Case(
        "<|channel|>commentary to=functions.get_weather to=functions.get_weather<|message|>{}<|call|>",
        calls=[("functions.get_weather", "{}")], stop=StopReason.CALL),
    "W08_hybrid_header": Case(
        '<|channel|>final <|constrain|>commentary to=functions.done<|constrain|><|constrain|>json<|message|>{"ok":true}<|call|>',
        calls=[("functions.done", '{"ok":true}')], codes={ErrorCode.PARSE_HEADER}, stop=StopReason.CALL,
        hidden=['{"ok":true}']),
    "W08b_final_unknown_content_type": Case(
        "<|channel|>final <|constrain|>answer<|message|>The answer.<|return|>",
        answer="The answer.", stop=StopReason.RETURN),
    "W09_stray_commentary_prefix": Case(
        "<|channel|>commentary to=assistant<|channel|>analysis<|message|>Need to check.<|end|><|start|>assistant<|channel|>commentary<|channel|>final<|message|>Done.<|return|>",
        answer="Done.", stop=StopReason.RETURN, hidden=["Need to check."]),
    "W10_garbled_channel": Case(
        '<|channel|>––commentary to=functions.search <|constrain|>json<|message|>{"q":"x"}<|call|>',
        calls=[("functions.search", '{"q":"x"}')], codes={ErrorCode.PARSE_HEADER}, stop=StopReason.CALL),
    "W10b_finalx_is_not_lost": Case(
        "<|channel|>finalx<|message|>Paris is the capital of France.<|return|>",
        answer="Paris is the capital of France.", codes={ErrorCode.PARSE_HEADER}, stop=StopReason.RETURN),
    "W10c_unknown_channel_decided_by_return": Case(
        "<|channel|>zzzz<|message|>Forty-two.<|return|>",
        answer="Forty-two.", codes={ErrorCode.PARSE_HEADER}, stop=StopReason.RETURN),
    "W11_missing_message_token": Case(
        "<|channel|>final The capital is Paris.<|return|>",
        answer="The capital is Paris.", codes={ErrorCode.PARSE_HEADER}, stop=StopReason.RETURN),
    "W11b_commentary_without_message": Case(
        "<|channel|>analysis Hidden thought<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
        answer="Hi", hidden=["Hidden thought"], stop=StopReason.RETURN),
    "W12_missing_start": Case(
        "<|channel|>analysis<|message|>Simple greeting.<|end|><|channel|>final<|message|>Hi!<|return|>",
        answer="Hi!", hidden=["Simple greeting."], stop=StopReason.RETURN),
    "W12b_missing_end": Case(
        "<|channel|>analysis<|message|>Simple greeting.<|start|>assistant<|channel|>final<|message|>Hi!<|return|>",
        answer="Hi!", hidden=["Simple greeting."], stop=StopReason.RETURN),
    "W13_free_text_between_messages": Case(
        "<|channel|>analysis<|message|>ok<|end|> 364 <|start|>assistant<|channel|>final<|message|>Hi<|return|>",
        answer="Hi", codes={ErrorCode.PARSE_HEADER}, stop=StopReason.RETURN, hidden=["364"]),
    "W14_duplicated_start_and_role": Case(
        "<|start|>assistant<|channel|>analysis<|message|>Think.<|end|><|start|><|start|>assistant<|channel|>final<|message|>Yes.<|return|>",
        answer="Yes.", hidden=["Think."], stop=StopReason.RETURN),
    "W14b_glued_role": Case(
        "assistant<|channel|>final<|message|>Yes.<|return|>", answer="Yes.", stop=StopReason.RETURN),
    "W15_end_then_return": Case(
        "<|channel|>final<|message|>Answer<|end|><|return|>", answer="Answer", stop=StopReason.RETURN),
    "W15b_end_then_call": Case(
        '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a":1}<|end|><|call|>',
        calls=[("functions.f", '{"a":1}')], stop=StopReason.CALL),
    "W16_repeated_final": Case(
        "<|channel|>final<|message|>It is 4.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.<|end|>",
        answer="It is 4.", codes={ErrorCode.PARSE_HEADER, ErrorCode.STREAM_TRUNCATED}),
    "W17a_cut_in_analysis": Case(
        "<|channel|>analysis<|message|>We need to compute the integral. First substitute",
        codes={ErrorCode.STREAM_TRUNCATED, ErrorCode.PARSE_CHANNEL_MISSING}, stop=StopReason.TRUNCATED,
        hidden=["First substitute"]),
    "W17b_cut_in_tool_call": Case(
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"San Fr',
        codes={ErrorCode.STREAM_TRUNCATED}, stop=StopReason.TRUNCATED),
    "W17c_cut_in_header": Case(
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>fin",
        codes={ErrorCode.STREAM_TRUNCATED}, stop=StopReason.TRUNCATED),
    "W18_truncated_json_arguments": Case(
        '<|channel|>commentary to=functions.get_ecs_instructions<|constrain|>json<|message|>{"data":{"envs":{}}<|call|>',
        calls=[("functions.get_ecs_instructions", '{"data":{"envs":{}}')],
        codes={ErrorCode.BODY_CONSTRAINT_VIOLATION}, stop=StopReason.CALL),
    "W19_pretty_printed_arguments": Case(
        '<|channel|>commentary to=functions.f <|constrain|>json<|message|>\n{\n  "path": "a.txt"\n}\n<|call|>',
        calls=[("functions.f", '\n{\n  "path": "a.txt"\n}\n')], stop=StopReason.CALL),
    "W20_python_code_body": Case(
        "<|channel|>analysis to=python code<|message|>import math\nprint(math.sqrt(2))<|call|>",
        calls=[("python", "import math\nprint(math.sqrt(2))")], stop=StopReason.CALL),
    "W21_parallel_calls": Case(
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"NYC"}<|call|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Denver"}<|call|>',
        calls=[("functions.get_weather", '{"city":"NYC"}'), ("functions.get_weather", '{"city":"Denver"}')],
        stop=StopReason.CALL),
    "W22_preamble": Case(
        '<|channel|>analysis<|message|>{long chain of thought}<|end|><|start|>assistant<|channel|>commentary<|message|>**Action plan**: 1. Generate a file<|end|><|start|>assistant<|channel|>commentary to=functions.generate_file<|constrain|>json<|message|>{"template": "basic_html"}<|call|>',
        calls=[("functions.generate_file", '{"template": "basic_html"}')], stop=StopReason.CALL,
        hidden=["{long chain of thought}"]),
    "W23_no_leak_of_reasoning": Case(
        "<|channel|>analysis<|message|>User says Hello World! Probably greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello! 👋<|return|>",
        answer="Hello! 👋", hidden=["Probably greeting."], stop=StopReason.RETURN),
    "W24_headerless_refusal": Case(
        "The user is asking for something. This is disallowed content. We must refuse.<|end|><|start|>assistant<|channel|>analysis<|message|>We must refuse.<|end|><|start|>assistant<|channel|>final<|message|>I'm sorry, but I can't help with that.<|return|>",
        answer="I'm sorry, but I can't help with that.", codes={ErrorCode.PARSE_CHANNEL_MISSING},
        hidden=["This is disallowed content."], stop=StopReason.RETURN),
    "W24b_headerless_answer_ended_by_return": Case(
        "Paris is the capital of France.<|return|>",
        answer="Paris is the capital of France.", codes={ErrorCode.PARSE_CHANNEL_MISSING},
        stop=StopReason.RETURN),
    "W25_final_only": Case(
        '<|channel|>final<|message|>{"issues":[]}<|return|>', answer='{"issues":[]}', stop=StopReason.RETURN),
    "W26_many_messages": Case(
        "<|channel|>analysis<|message|>a1<|end|><|start|>assistant<|channel|>analysis<|message|>a2<|end|><|start|>assistant<|channel|>commentary<|message|>Plan.<|end|><|start|>assistant<|channel|>analysis<|message|>a3<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
        answer="Done.", hidden=["a1", "a2", "a3"], stop=StopReason.RETURN),
    "W27_analysis_only": Case(
        "<|channel|>analysis<|message|>User asks about X. We should answer.<|end|><|endoftext|>",
        codes={ErrorCode.PARSE_CHANNEL_MISSING}, stop=StopReason.END_OF_TEXT, hidden=["We should answer."]),
    "W28_hallucinated_tool_reply": Case(
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"SF"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temp":20}<|end|><|start|>assistant<|channel|>final<|message|>It is 20C in SF.<|return|>',
        calls=[("functions.get_weather", '{"city":"SF"}')], codes={ErrorCode.PARSE_HEADER},
        stop=StopReason.CALL, hidden=["It is 20C in SF."]),
    "W29_split_emoji": Case(
        "<|channel|>final<|message|>Love it 💖💖<|return|>", answer="Love it 💖💖", stop=StopReason.RETURN),
    "W30_marker_text_in_ordinary_tokens": Case(
        "<|channel|>final<|message|>Type ⟦<|end|>⟧ to stop.<|return|>", answer="Type <|end|> to stop.",
        stop=StopReason.RETURN),
    "W32_never_raises_on_garbage": Case(
        "<|message|><|constrain|><|call|><|start|><|end|><|return|>", codes={ErrorCode.PARSE_HEADER},
        stop=StopReason.CALL),
    "W33_unknown_tool": Case(
        '<|channel|>commentary to=functions.ask_followup_question <|constrain|>json<|message|>{"question":"?"}<|call|>',
        calls=[("functions.ask_followup_question", '{"question":"?"}')], codes={ErrorCode.CALL_SCHEMA},
        stop=StopReason.CALL),
    "W34_textual_tool_call": Case(
        '<|channel|>final<|message|>⟦to=functions.read <|constrain|>json<|message|>{"path":"a"}<|call|>⟧<|return|>',
        answer='to=functions.read <|constrain|>json<|message|>{"path":"a"}<|call|>', codes={ErrorCode.CALL_SCHEMA},
        stop=StopReason.RETURN),
    "W35_hallucinated_execution_cut": Case(
        '<|channel|>commentary to=functions.f json<|message|>{}<|call|><|start|>functions.f to=assistant<|channel|>commentary<|message|>{"ok":1}<|end|>',
        calls=[("functions.f", "{}")], codes={ErrorCode.PARSE_HEADER}, stop=StopReason.CALL),
    "W36_garbage_from_low_quants": Case(
        "<|channel|>analysis<|message|>ç<|reserved_200010|>ç<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>",
        answer="ok", codes={ErrorCode.PARSE_HEADER}, stop=StopReason.RETURN),
    "W37_reasoning_loop_cut_by_length": Case(
        "<|channel|>analysis<|message|>" + "Let me check the entity model. " * 20,
        codes={ErrorCode.STREAM_TRUNCATED}, stop=StopReason.TRUNCATED, hidden=["Let me check"]),
    "W38_constrain_on_final": Case(
        '<|channel|>final <|constrain|>json<|message|>{"items":["coffee","soda","eggs"]}<|return|>',
        answer='{"items":["coffee","soda","eggs"]}', stop=StopReason.RETURN),
    "W39_long_context_garbage_header": Case(
        "<|channel|>commentary to=functions.f <|constrain|>json<|constrain|>json<|message|>{}<|call|>",
        calls=[("functions.f", "{}")], codes={ErrorCode.PARSE_HEADER}, stop=StopReason.CALL),
}

KNOWN = {"W04_undeclared_builtin": TOOLS - {"python"}}


def tokens_of(encoding: HarmonyEncoding, wild: str) -> list[int]:
    tokens: list[int] = []
    for i, part in enumerate(re.split("[⟦⟧]", wild)):
        tokens += encoding.encode_ordinary(part) if i % 2 else encoding.encode_with_specials(part)
    return tokens


def run(encoding: HarmonyEncoding, case_id: str, case: Case):  # type: ignore[no-untyped-def]
    tokens = tokens_of(encoding, case.wild)
    parser = StreamParser(encoding, known_tools=KNOWN.get(case_id, TOOLS | {"python"}))
    events = []
    for token in tokens:  # token by token, as a stream arrives
        events.extend(parser.feed(token))
    events.extend(parser.finish())
    return parser, events


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_catalogue_case(case_id: str, encoding: HarmonyEncoding) -> None:
    case = CASES[case_id]
    parser, events = run(encoding, case_id, case)
    done = [e for e in events if isinstance(e, MessageDone)]
    answers = [e.message.text for e in done if e.lane is Lane.ANSWER]
    assert answers == ([case.answer] if case.answer is not None else [])
    calls = [(e.message.recipient, e.message.text) for e in done if e.lane is Lane.TOOL_CALL and e.complete]
    assert calls == case.calls
    codes = {i.code for i in parser.issues}
    assert case.codes <= codes, codes
    if case.stop is not None:
        assert parser.stop is case.stop
    visible = "".join(e.text for e in events if isinstance(e, ContentDelta) and e.lane in (Lane.ANSWER, Lane.PREAMBLE))
    visible += "".join(e.message.text for e in done if e.lane in (Lane.ANSWER, Lane.PREAMBLE))
    for secret in case.hidden:
        assert secret not in visible


def test_catalogue_covers_w01_to_w39() -> None:
    numbers = {int(name[1:3]) for name in CASES}
    assert numbers >= set(range(1, 40)) - {31}  # W31 (parser reuse) has its own test below


def test_w31_reset_clears_everything(encoding: HarmonyEncoding) -> None:
    parser = StreamParser(encoding)
    parser.feed_many(encoding.encode_with_specials("<|channel|>final<|message|>Hi"))
    parser.reset()  # mid-message
    result = parser.parse(encoding.encode_with_specials("<|channel|>final<|message|>Fresh<|return|>"))
    assert [m.text for m in result.messages] == ["Fresh"]
    assert result.stop is StopReason.RETURN and not result.issues


def test_w29_split_multibyte_is_buffered_not_replaced(encoding: HarmonyEncoding) -> None:
    emoji = "💖".encode()
    parser = StreamParser(encoding)
    parser.feed_many(encoding.encode_with_specials("<|channel|>final<|message|>"))
    # Two single-byte tokens of the emoji's UTF-8 (ranks of raw bytes), then the rest.
    ranks = {encoding.token_bytes(i): i for i in range(256 * 4) if len(encoding.token_bytes(i)) == 1}
    deltas = []
    for b in emoji:
        deltas += [e.text for e in parser.feed(ranks[bytes([b])]) if isinstance(e, ContentDelta)]
    assert deltas == ["💖"]
    parser.feed(ranks[b"\xe2"])
    events = parser.feed(200002)
    final = next(e for e in events if isinstance(e, MessageDone))
    assert final.message.text == "💖\ufffd"


def test_prompt_side_text_is_never_structure(encoding: HarmonyEncoding) -> None:
    result = parse_tokens(encoding.encode_ordinary("<|channel|>final<|message|>Hi<|return|>"))
    assert all(m.channel is None for m in result.messages)
    assert result.stop is StopReason.TRUNCATED


def _issues(encoding: HarmonyEncoding, wild: str) -> tuple[list[tuple[str, str]], list[tuple[str | None, str | None]]]:
    result = StreamParser(encoding, known_tools=TOOLS | {"functions.get_weather", "functions.f"}).parse(
        encoding.encode_with_specials(wild))
    return ([(i.severity.value, i.message) for i in result.issues],
            [(m.channel, m.recipient) for m in result.messages])


def test_duplicated_header_parts_are_said_and_a_stray_prefix_is_only_noted(encoding: HarmonyEncoding) -> None:
    issues, _ = _issues(encoding, "<|channel|>commentary to=functions.get_weather to=functions.get_weather<|message|>{}<|call|>")
    assert ("warning", "recipient 'functions.get_weather' given twice") in issues  # W07
    issues, _ = _issues(encoding, "<|start|>assistant<|channel|>commentary<|channel|>commentary to=functions.f<|message|>{}<|call|>")
    assert ("warning", "channel 'commentary' given twice") in issues  # W06
    issues, messages = _issues(encoding, CASES["W09_stray_commentary_prefix"].wild)
    assert issues and all(severity == "debug" for severity, _ in issues)  # W09 is no error
    assert messages == [("analysis", None), ("final", None)]


def test_a_tool_call_on_the_final_channel_is_stored_on_commentary(encoding: HarmonyEncoding) -> None:
    issues, messages = _issues(encoding, '<|channel|>final to=functions.f <|constrain|>json<|message|>{"a":1}<|call|>')
    assert messages == [("commentary", "functions.f")]
    assert ("warning", "a tool call on the final channel, kept on commentary") in issues


def test_an_id_outside_the_vocabulary_is_a_replacement_character(encoding: HarmonyEncoding) -> None:
    tokens = [*encoding.encode_with_specials("<|channel|>final<|message|>A"), 300000, *encoding.encode_with_specials("B<|return|>")]
    streamed = StreamParser(encoding)
    for token in tokens:
        streamed.feed(token)
    streamed.finish()
    whole = StreamParser(encoding).parse(tokens)
    assert [m.text for m in streamed.messages] == [m.text for m in whole.messages] == ["A\ufffdB"]
    assert any("300000" in i.message for i in whole.issues) and whole.stop is StopReason.RETURN
