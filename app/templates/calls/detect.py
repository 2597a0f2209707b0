"""Finds the tool-call format a Jinja chat template speaks (`detect`).

It renders probe conversations whose assistant turn makes sentinel calls (`learn.probes`) and
takes what the assistant turn adds (`turn_part`); a template that writes only the first of two
calls writes one call a turn. Each hand-written format in `FORMATS` is tried first (unless
`families=False`): it fits when it reads every probe's calls back exactly, leaving no other
text. Where none fits, a format is learned from the renderings (`learn.learn`, then
`DerivedFormat` or `LearnedPythonic`) and held to the same round trip before it is used; then
prose beside a call and a tool's result are rendered too, and what read back is recorded
(`Learning`: markers, arguments, confidence).

Guarantees: `detect` never raises for a template's faults: it returns a `Detection` with a
format, or with a sentence saying why the template has no usable tool format — never a learned
format that did not read its own probe calls back; it is cached per (source, bos, eos,
families); message text given to the template is only ever the probes' own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from app.templates.calls import learned as probe
from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.hermes import tojson
from app.templates.calls.learn import IDS, NAME_A, NAME_B, Parts, learn, probes, think_tags
from app.templates.calls.learned import Learning, arguments_of, learned_format, markers_of
from app.templates.calls.scanner import CallScanner
from app.templates.jinja_render import JinjaTemplateError, render

PROSE = "probe_prose_text"
BESIDE = "probe_words_before_a_call"  # prose the assistant writes before its call
RESULT = "probe_tool_result_text"
Render = Callable[[list[dict[str, Any]], bool], str]  # (messages, add_generation_prompt)


@dataclass(frozen=True)
class Detection:
    """A template's call format (`format` None: `reason` says why there is none)."""

    format: CallFormat | None
    reason: str = ""
    string_arguments: bool = False  # the template wants a call's arguments as JSON text
    learned: Learning | None = None  # for a learned format: what it is and how sure

    def describe(self) -> str:
        """One line on the format: what was learned, the family's name, or why there is none."""
        if self.format is None:
            return f"no tool-call format: {self.reason}"
        if self.learned is not None:
            return self.learned.describe()
        return f"format: {self.format.name}"


@dataclass(frozen=True)
class TurnPart:
    """What an assistant turn adds to the prompt: `prefill` (the end of the generation prompt
    the turn rewrites, e.g. an opened `<think>`), `lead` (what the turn opens with before any
    text, e.g. an empty think block), `body`, then the end-of-turn marker (dropped)."""

    prefill: str
    lead: str
    body: str

    @property
    def generated(self) -> str:
        """The text a model writes for this turn after the generation prompt."""
        return self.prefill + self.lead + self.body


def call_messages(
    calls: Sequence[tuple[str, Any]], content: str = "", string_arguments: bool = False
) -> dict[str, Any]:
    """An assistant message making `calls` (name, arguments), OpenAI-shaped."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": IDS[i] if i < len(IDS) else f"call_{i + 1:04d}",
                "type": "function",
                "function": {"name": name, "arguments": tojson(args) if string_arguments else args},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def _inside_tag(text: str) -> bool:
    return text.rfind("<") > text.rfind(">")


def _after(render: Render, head: list[dict[str, Any]], turn: dict[str, Any]) -> tuple[str, str]:
    """(prefill, the text after the shared prefix) of `head + [turn]` against its prompt."""
    prompt, full = render(head, True), render([*head, turn], False)
    n = 0
    while n < min(len(prompt), len(full)) and prompt[n] == full[n]:
        n += 1
    while n and _inside_tag(full[:n]) and n < len(prompt):
        n -= 1
    return prompt[n:], full[n:]


def turn_part(render: Render, head: list[dict[str, Any]], turn: dict[str, Any]) -> TurnPart:
    """What `turn` (an assistant message) adds after the generation prompt of `head`."""
    _, plain = _after(render, head, {"role": "assistant", "content": PROSE})
    at = plain.find(PROSE)
    lead, end = (plain[:at], plain[at + len(PROSE) :]) if at >= 0 else ("", "")
    prefill, text = _after(render, head, turn)
    for tail in (end, end.rstrip()):
        if tail.strip() and text.endswith(tail):
            text = text[: len(text) - len(tail)]
            break
    for opening in (lead, lead.rstrip()):
        if opening.strip() and text.startswith(opening):
            return TurnPart(prefill, opening, text[len(opening) :])
    return TurnPart(prefill, "", text)


def probe_tools() -> list[dict[str, Any]]:
    """OpenAI-shaped declarations of the probes' tools."""
    props = {k: {"type": "string"} for k in ("key_alpha", "key_beta", "key_gamma")}
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": "A probe.",
                "parameters": {"type": "object", "properties": props},
            },
        }
        for n in (NAME_A, NAME_B)
    ]


def renderer(source: str, bos: str, eos: str, tools: list[dict[str, Any]] | None) -> Render:
    """A `Render` of `source` with `tools` declared."""

    def run(messages: list[dict[str, Any]], add_generation_prompt: bool) -> str:
        return render(
            source,
            messages=messages,
            tools=tools,
            bos_token=bos,
            eos_token=eos,
            add_generation_prompt=add_generation_prompt,
        )

    return run


def reads_back(fmt: CallFormat, text: str, calls: Sequence[tuple[str, Any]]) -> bool:
    """Whether `fmt` reads exactly `calls` out of `text`, and nothing else."""
    if not fmt.triggers or not all(fmt.triggers):
        return False
    scanner = CallScanner(fmt)
    pieces = scanner.feed(text) + scanner.finish()
    if any(p.strip() if isinstance(p, str) else p.invalid for p in pieces):
        return False
    found: list[ToolCall] = [c for p in pieces if not isinstance(p, str) for c in p.calls]
    if len(found) != len(calls):
        return False
    return all(
        c.name == name and json.loads(c.arguments) == args
        for c, (name, args) in zip(found, calls, strict=True)
    )


HEAD = [{"role": "user", "content": "probe_question"}]


def _parts(render: Render, string_arguments: bool) -> Parts:
    out: dict[str, str | None] = {}
    for key, calls in probes().items():
        try:
            out[key] = turn_part(render, HEAD, call_messages(calls, "", string_arguments)).body
        except JinjaTemplateError:
            if key != "two_calls":
                raise
            out[key] = None  # one call a turn
    if NAME_B not in (out["two_calls"] or NAME_B):
        out["two_calls"] = None  # it writes only the first: one call a turn
    return Parts(**out)  # type: ignore[arg-type]


def _fits(fmt: CallFormat, parts: Parts) -> bool:
    texts = {k: getattr(parts, k) for k in ("one", "two_args", "two_num", "two_calls")}
    return all(t is None or reads_back(fmt, t, probes()[k]) for k, t in texts.items())


@lru_cache(maxsize=16)
def detect(source: str, bos: str = "", eos: str = "", *, families: bool = True) -> Detection:
    """The call format `source` speaks (see the module guarantees); `families=False` skips
    the hand-written formats, so only a learned one can be found."""
    from app.templates.calls.formats import FORMATS  # at call time: formats are still added
    from app.templates.calls.pythonic import speaks_pythonic

    if families and speaks_pythonic(source):  # LFM2's templates may never write their calls
        return Detection(FORMATS["pythonic"])
    if "tool_calls" not in source:
        return Detection(None, "the template never writes an assistant's tool calls")
    render = renderer(source, bos, eos, probe_tools())
    problem = ""
    for string_arguments in (False, True):
        try:
            parts = _parts(render, string_arguments)
        except JinjaTemplateError as exc:
            problem = problem or exc.message
            continue
        for fmt in FORMATS.values() if families else ():
            if _fits(fmt, parts):
                return Detection(fmt, "", string_arguments)
        return _learned(render, parts, string_arguments)
    return Detection(None, f"the template cannot render a tool call: {problem}")


def _learned(render: Render, parts: Parts, string_arguments: bool) -> Detection:
    """The format learned from `parts`, once it reads them back; else why there is none."""
    markup = learn(parts)
    if isinstance(markup, str):
        return Detection(None, markup, string_arguments)
    opened = turn_part(render, HEAD, call_messages(probes()["one"], "", string_arguments))
    think = think_tags(opened.prefill + opened.lead)
    fmt = learned_format(markup, think)
    if not fmt.triggers[0]:
        return Detection(None, "the template writes a call with no markup before it")
    if not _fits(fmt, parts):
        return Detection(
            None, "the markup learned from the template does not read its own calls back"
        )
    gap = _turn_break(fmt, render, string_arguments)
    broken = learned_format(markup, think, gap) if gap else fmt
    fmt = broken if _fits(broken, parts) else fmt
    return Detection(fmt, "", string_arguments, _learning(fmt, render, parts, string_arguments))


def _beside(render: Render, strings: bool) -> str | None:
    """The assistant's part of a turn with prose before its call (None: it cannot be written)."""
    try:
        return turn_part(render, HEAD, call_messages(probes()["one"], BESIDE, strings)).body
    except JinjaTemplateError:
        return None


def _turn_break(fmt: CallFormat, render: Render, strings: bool) -> str:
    """The markup between prose and a call a template writes as two turns ("" for none)."""
    body = _beside(render, strings) or ""
    at = body.find(BESIDE)
    start = body.find(fmt.triggers[0], at + 1)
    gap = body[at + len(BESIDE) : start] if 0 <= at < start else ""
    return gap if gap.strip() and reads_back(fmt, body[start:], probes()["one"]) else ""


def _learning(fmt: CallFormat, render: Render, parts: Parts, strings: bool) -> Learning:
    """What `fmt` read back of the template's probes (see `Learning`)."""
    checked = [probe.ONE, probe.TWO_ARGS, probe.NUMBER]
    unchecked: list[tuple[str, str]] = []
    failed: list[tuple[str, str]] = []
    if parts.two_calls is None:
        unchecked.append((probe.TWO_CALLS, "the template writes one call a turn"))
    else:
        checked.append(probe.TWO_CALLS)
    for name, check in ((probe.PROSE, _prose), (probe.RESULT, _result)):
        verdict, why = check(fmt, render, strings)
        if verdict is None:
            unchecked.append((name, why))
        elif verdict:
            checked.append(name)
        else:
            failed.append((name, why))
    return Learning(
        markers_of(fmt), arguments_of(fmt), tuple(checked), tuple(unchecked), tuple(failed)
    )


def _prose(fmt: CallFormat, render: Render, strings: bool) -> tuple[bool | None, str]:
    """Whether prose before a call reads back as that prose, then the call (None: the
    template cannot write them together), and why not."""
    calls = probes()["one"]
    body = _beside(render, strings)
    if body is None:
        return None, "the template cannot render it"
    if BESIDE not in body or NAME_A not in body:
        return None, "the template drops text beside a call, or a call beside text"
    scanner = CallScanner(fmt)
    pieces = scanner.feed(body) + scanner.finish()
    text = "".join(p for p in pieces if isinstance(p, str)).strip()
    if text == BESIDE and reads_back(fmt, body.replace(BESIDE, "", 1), calls):
        return True, ""
    return False, f"the text beside the call reads as {text[:80]!r}"


def _result(fmt: CallFormat, render: Render, strings: bool) -> tuple[bool | None, str]:
    """Whether the template writes a tool's result after a call."""
    answer = {"role": "tool", "tool_call_id": IDS[0], "name": NAME_A, "content": RESULT}
    turn = call_messages(probes()["one"], "", strings)
    try:
        text = render([*HEAD, turn, answer], True)
    except JinjaTemplateError as exc:
        return False, f"the template cannot render a result: {exc.message}"
    return (True, "") if RESULT in text else (False, "the template drops a tool's result")


__all__ = [
    "PROSE",
    "RESULT",
    "Detection",
    "Render",
    "TurnPart",
    "call_messages",
    "detect",
    "probe_tools",
    "reads_back",
    "renderer",
    "turn_part",
]
