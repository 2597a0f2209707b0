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

from dataclasses import dataclass
from functools import lru_cache

from app.templates.calls import learned as probe
from app.templates.calls.derived import DerivedFormat
from app.templates.calls.format import CallFormat
from app.templates.calls.learn import (
    IDS,
    NAME_A,
    NAME_B,
    Parts,
    PythonicMarkup,
    continued_tags,
    learn,
    opening_of,
    probes,
    reopened,
    think_tags,
)
from app.templates.calls.learned import Learning, arguments_of, learned_format, markers_of
from app.templates.calls.markup import Markup
from app.templates.calls.probe_turns import (
    BESIDE,
    HEAD,
    PROSE,
    RESULT,
    Render,
    TurnPart,
    after,
    call_messages,
    probe_tools,
    reads_back,
    renderer,
    turn_part,
)
from app.templates.calls.scanner import CallScanner
from app.templates.jinja_render import JinjaTemplateError


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
        return _learned(render, parts, string_arguments, (source, bos, eos))
    return Detection(None, f"the template cannot render a tool call: {problem}")


def _learned(
    render: Render, parts: Parts, string_arguments: bool, template: tuple[str, str, str]
) -> Detection:
    """The format learned from `parts`, once it reads them back; else why there is none."""
    markup = learn(parts)
    if isinstance(markup, str):
        return Detection(None, markup, string_arguments)
    opened = turn_part(render, HEAD, call_messages(probes()["one"], "", string_arguments))
    think = think_tags(opened.prefill + opened.lead)
    fmt = learned_format(markup, think)
    if not fmt.triggers[0] or not _fits(fmt, parts) or not _answers(fmt, render):
        why = "the template writes a call with no markup before it"
        if fmt.triggers[0]:
            why = "the markup learned from the template does not read its own calls back"
            if _fits(fmt, parts):
                why = "the markup learned from the template reads a plain answer as a call"
        found = _continued(render, parts, markup, _reasoning(template, think), why)
        if isinstance(found, str):
            return Detection(None, found)
        fmt = found
    else:
        gap = _turn_break(fmt, render, string_arguments)
        broken = learned_format(markup, think, gap) if gap else fmt
        fmt = broken if _fits(broken, parts) else fmt
    return Detection(fmt, "", string_arguments, _learning(fmt, render, parts, string_arguments))


def _continued(
    render: Render, parts: Parts, markup: Markup | PythonicMarkup, think: tuple[str, str], why: str
) -> CallFormat | str:
    """The format of a template whose generation prompt ends with markup each call opens with
    (`learn.opening_of`), learned as if each turn began with it; else why there is none
    (`why`, when the prompt ends with no such markup)."""
    prompt = render(HEAD, True)
    opening = opening_of(markup, prompt) if isinstance(markup, Markup) else ""
    again = learn(reopened(parts, opening)) if opening else None
    if not isinstance(again, Markup) or not again.call_open.lead().lstrip().startswith(opening):
        return why
    answer = _answer_lead(render)
    if not answer.strip():
        return (
            f"the generation prompt ends with {opening!r}, which opens a call, and an answer"
            " continues it with no markup of its own, so an answer cannot be told from a call"
        )
    fmt = learned_format(again, continued_tags(think, opening), opening=opening, answer=answer)
    if not _fits(fmt, parts) or not _answers(fmt, render):
        return f"{why}, nor as the sequel of the prompt's {opening!r}"
    return fmt


def _reasoning(template: tuple[str, str, str], think: tuple[str, str]) -> tuple[str, str]:
    """The template's own reasoning markup (`reasoning_markup`), else `think`."""
    from app.templates.reasoning_markup import reasoning_markup  # loaded when a template is read

    found = reasoning_markup(*template)
    return found.tags if found is not None else think


def _answers(fmt: CallFormat, render: Render) -> bool:
    """Whether a plain assistant turn (its text after the generation prompt) reads as answer
    text: no call, no notice."""
    _, plain = after(render, HEAD, {"role": "assistant", "content": PROSE})
    at = plain.find(PROSE)
    if at < 0:
        return True  # nothing to check it against
    scanner = CallScanner(fmt)
    pieces = scanner.feed(plain[: at + len(PROSE)]) + scanner.finish()
    return all(isinstance(p, str) for p in pieces)


def _answer_lead(render: Render) -> str:
    """What a plain assistant turn writes before its text (after the generation prompt)."""
    _, plain = after(render, HEAD, {"role": "assistant", "content": PROSE})
    at = plain.find(PROSE)
    return plain[:at] if at >= 0 else ""


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
    answer = fmt.answer if isinstance(fmt, DerivedFormat) else ""
    return Learning(
        markers_of(fmt),
        arguments_of(fmt),
        tuple(checked),
        tuple(unchecked),
        tuple(failed),
        fmt.opening,
        answer,
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
    if fmt.opening and isinstance(fmt, DerivedFormat):  # the answer continues the opening
        body = fmt.answer + body
    scanner = CallScanner(fmt)
    pieces = scanner.feed(body) + scanner.finish()
    text = "".join(p for p in pieces if isinstance(p, str)).strip()
    if text == BESIDE and reads_back(fmt, _call_alone(fmt, body), calls):
        return True, ""
    return False, f"the text beside the call reads as {text[:80]!r}"


def _call_alone(fmt: CallFormat, body: str) -> str:
    """The call of a turn with prose before it, as a turn with no prose writes it."""
    if not fmt.opening:
        return body.replace(BESIDE, "", 1)
    after = body[body.index(BESIDE) + len(BESIDE) :]  # a message of its own: the opening on
    at = after.find(fmt.opening)
    return after[at + len(fmt.opening) :] if at >= 0 else after


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
