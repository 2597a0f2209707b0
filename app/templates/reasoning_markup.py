"""How a chat template writes an assistant's reasoning: the markup that opens a reasoning block
and the markup that closes it (`ReasoningMarkup`), derived from the template's own renderings
(`reasoning_markup`), and the routing rule that markup implies (`split_reasoning`).

The derivation renders a turn whose assistant message carries probe `reasoning_content` beside
probe content, the same turn without the reasoning, the turn with a probe tool call beside the
reasoning, and the bare generation prompt — first with the template's own defaults, then asking
for thinking (`enable_thinking`, `thinking`) for a template that writes reasoning only then. The
close is what the turn writes between the reasoning and what follows it, cut where a turn with
text and a turn with a call stop agreeing (or stripped of the answer's own opening, as a turn
without reasoning writes it). The open is the close's mirror (`</x>` → `<x>`, `END` → `START`,
`close` → `open`, …) where the turn writes it before the reasoning; else what the turn writes
before the reasoning and a turn without it does not; else what the generation prompt writes
where a past turn writes its reasoning (a prefill in plain words). Markers are cut only between
`<…>`/`[…]` units and words, and their outer blank space is dropped.

Guarantees: `reasoning_markup` never raises for a template's faults; it returns markup only
when the markup reads the template's own rendering back — the probe reasoning routed as
reasoning, the probe content as the answer (`split_reasoning`, the same rule as the text
parser: a block opens at `open` or where the prompt left it open, closes at `close`, and a
close with no open is dropped) — else None. `prompt_opens` says whether the template's
generation prompt (its default variables) ends inside an open block. Results are cached per
(source, bos, eos); no text but the probes' own is given to the template.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from app.templates.base import Tokenizer
from app.templates.calls.learn import KEY_A, NAME_A, VAL_A
from app.templates.calls.probe_turns import call_messages, probe_tools
from app.templates.jinja_render import JinjaTemplateError, render

REASONING, ANSWER = "probe_reasoning_words", "probe_answer_words"
THINK_TAGS = ("<think>", "</think>")
THINKING_ON: Mapping[str, Any] = {"enable_thinking": True, "thinking": True}
LONGEST = 80  # a marker longer than this is taken for text, not markup
_USER = {"role": "user", "content": "probe_question"}
_MIRRORS = (
    ("</", "<"),
    ("[/", "["),
    ("<|/", "<|"),
    ("\u25c1/", "\u25c1"),  # ◁/think▷
    ("END", "START"),
    ("END", "BEGIN"),
    ("End", "Start"),
    ("end", "start"),
    ("CLOSE", "OPEN"),
    ("Close", "Open"),
    ("close", "open"),
)
# (messages, add_generation_prompt, extra template variables) -> the rendered text
Render = Callable[[list[dict[str, Any]], bool, Mapping[str, Any]], str]


@dataclass(frozen=True)
class ReasoningMarkup:
    """A template's reasoning block: `open` … `close` (both stripped of outer blank space);
    `prompt_opens`: its generation prompt ends inside one; `found_by`: how `open` was found."""

    open: str
    close: str
    prompt_opens: bool = False
    found_by: str = ""

    @property
    def tags(self) -> tuple[str, str]:
        return self.open, self.close

    def opened_by(self, prompt: str) -> bool:
        """Whether `prompt` ends inside an open block (the generation starts in reasoning)."""
        return prompt.rstrip().endswith(self.open)

    def describe(self) -> str:
        """One line for `templates show`."""
        opened = ", the generation prompt opens it" if self.prompt_opens else ""
        return f"reasoning: {self.open!r} … {self.close!r} ({self.found_by}{opened})"


def chosen_tags(markup: ReasoningMarkup | None, family: tuple[str, str] | None) -> tuple[str, str]:
    """The tags a parser reads: a call format's own where it names others than `<think>`,
    else the template's derived markup, else `<think>`/`</think>`."""
    if family is not None and family != THINK_TAGS:
        return family
    return markup.tags if markup is not None else THINK_TAGS


def split_reasoning(text: str, tags: tuple[str, str], inside: bool = False) -> tuple[str, str]:
    """(reasoning, answer) of `text` under `tags`: a block opens at the open tag (or at once,
    `inside`), closes at the close tag; a close tag with no open one is dropped."""
    opening, closing = tags
    reasoning: list[str] = []
    answer: list[str] = []
    while text:
        if inside:
            at = text.find(closing)
            reasoning.append(text if at < 0 else text[:at])
            text, inside = ("", True) if at < 0 else (text[at + len(closing) :], False)
            continue
        start, stray = text.find(opening), text.find(closing)
        if stray >= 0 and not 0 <= start < stray:
            answer.append(text[:stray])
            text = text[stray + len(closing) :]
        elif start >= 0:
            answer.append(text[:start])
            text, inside = text[start + len(opening) :], True
        else:
            answer.append(text)
            text = ""
    return "".join(reasoning), "".join(answer)


def spelled_markers(tokenizer: Tokenizer, markers: Sequence[str]) -> dict[int, str]:
    """The control tokens (`token_table` b"") within `markers` as the model's vocabulary
    splits them, by id, each with its text — so a parser reads them as the markup they are."""
    table = tokenizer.token_table()
    out: dict[int, str] = {}
    for marker in markers:
        for i in tokenizer.tokenize(marker, special=True):
            if 0 <= i < len(table) and table[i] == b"":
                out[i] = b"".join(tokenizer.special_bytes([i])).decode("utf-8", "replace")
    return out


@lru_cache(maxsize=32)
def reasoning_markup(source: str, bos: str = "", eos: str = "") -> ReasoningMarkup | None:
    """The reasoning markup `source` writes, None where it writes none this can read."""

    def run(messages: list[dict[str, Any]], prompt: bool, extra: Mapping[str, Any]) -> str:
        return render(
            source,
            messages=messages,
            tools=probe_tools(),
            add_generation_prompt=prompt,
            bos_token=bos,
            eos_token=eos,
            **extra,
        )

    return derive(run)


def derive(run: Render) -> ReasoningMarkup | None:
    """The reasoning markup of the template `run` renders (see the module docstring)."""
    for extra in ({}, THINKING_ON):
        try:
            found = _derive(run, extra)
        except JinjaTemplateError:
            continue
        if found is not None:
            try:
                prompt = run([_USER], True, {})
            except JinjaTemplateError:
                prompt = ""
            opened = bool(prompt) and found.opened_by(prompt)
            return ReasoningMarkup(found.open, found.close, opened, found.found_by)
    return None


def _turn(content: str, reasoning: str = "", call: bool = False) -> dict[str, Any]:
    turn = call_messages([(NAME_A, {KEY_A: VAL_A})] if call else [], content)
    if not call:
        del turn["tool_calls"]
    if reasoning:
        turn["reasoning_content"] = reasoning
    return turn


def _derive(run: Render, extra: Mapping[str, Any]) -> ReasoningMarkup | None:
    full = run([_USER, _turn(ANSWER, REASONING)], False, extra)
    at, content = full.find(REASONING), full.find(ANSWER)
    if not 0 <= at < content:
        return None  # the template drops the reasoning (or writes it after the answer)
    plain = run([_USER, _turn(ANSWER)], False, extra)
    prompt = run([_USER], True, extra)
    before, after = full[:at], full[at + len(REASONING) : content]
    close = _close(run, extra, after, plain[: max(0, plain.find(ANSWER))])
    opening, how = _open(before, plain[: max(0, plain.find(ANSWER))], close, prompt, full)
    if not _fair(opening) or not _fair(close) or opening == close:
        return None
    markup = ReasoningMarkup(opening, close, found_by=how)
    return markup if _reads_back(markup, run([_USER], False, extra), prompt, full) else None


def _reads_back(markup: ReasoningMarkup, head: str, prompt: str, full: str) -> bool:
    """Whether `markup` routes the probe turn `full` right: as a model continues `prompt`
    where the prompt leaves a block open, else as the whole turn after the conversation
    `head` (its open included)."""
    if markup.opened_by(prompt):
        text, inside = full[_shared(prompt, full) :], True
    else:
        text, inside = full[len(head) :] if full.startswith(head) else full, False
    thought, answer = split_reasoning(text, markup.tags, inside)
    return REASONING in thought and ANSWER in answer and REASONING not in answer


def _fair(marker: str) -> bool:
    return (
        bool(marker) and len(marker) <= LONGEST and REASONING not in marker and ANSWER not in marker
    )


def _close(run: Render, extra: Mapping[str, Any], after: str, plain_lead: str) -> str:
    """What closes the block: `after` (between the reasoning and the content) cut where a
    turn with a call instead of content stops agreeing, else stripped of the opening that a
    turn without reasoning writes before its content too."""
    try:
        called = run([_USER, _turn("", REASONING, call=True)], False, extra)
    except JinjaTemplateError:
        called = ""
    at = called.find(REASONING)
    if at >= 0 and NAME_A in called[at:]:
        cut = after[: _shared(after, called[at + len(REASONING) :])].strip()
        if cut:
            return cut
    rest = after[: len(after) - _shared_tail(after, plain_lead)].strip()
    return rest or after.strip()


def _open(before: str, plain_lead: str, close: str, prompt: str, full: str) -> tuple[str, str]:
    """(what opens the block, how it was found); ("", "") when nothing does."""
    for mirror in _mirrors(close):
        if before.rstrip().endswith(mirror):
            return mirror, "the close's mirror, written before the reasoning"
    written = before[_shared(before, plain_lead) :].strip()
    if written:
        return written, "written before the reasoning only when there is some"
    start = _shared(prompt, full)
    prefill = prompt[start:].strip()
    if prefill and full[start:].lstrip().startswith(REASONING):
        return prefill, "written by the generation prompt where the reasoning goes"
    return "", ""


def _mirrors(close: str) -> Iterator[str]:
    """The mirrors of `close`'s unit-bounded beginnings, longest first."""
    for end in range(len(close), 0, -1):
        head = close[:end]
        if _inside(head) or (end < len(close) and not _between_units(close, end)):
            continue
        for old, new in _MIRRORS:
            if old in head:
                yield head.replace(old, new, 1)


def _inside(text: str) -> bool:
    """Whether `text` ends inside a `<…>` or `[…]` unit."""
    return text.rfind("<") > text.rfind(">") or text.rfind("[") > text.rfind("]")


def _between_units(text: str, at: int) -> bool:
    """Whether `at` falls between two units of `text` (not inside a word or a marker)."""
    left, right = text[at - 1], text[at]
    return not (left.isalnum() and right.isalnum()) and not _inside(text[:at])


def _shared(a: str, b: str) -> int:
    """The length of `a` and `b`'s common beginning, cut back to a unit boundary."""
    n, most = 0, min(len(a), len(b))
    while n < most and a[n] == b[n]:
        n += 1
    while n and n < len(a) and not _between_units(a, n):
        n -= 1
    return n


def _shared_tail(a: str, b: str) -> int:
    """The length of `a` and `b`'s common ending, cut back to a unit boundary of `a`."""
    n, most = 0, min(len(a), len(b))
    while n < most and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    while n and n < len(a) and not _between_units(a, len(a) - n):
        n -= 1
    return n


__all__ = [
    "ANSWER",
    "REASONING",
    "THINKING_ON",
    "THINK_TAGS",
    "ReasoningMarkup",
    "chosen_tags",
    "derive",
    "reasoning_markup",
    "spelled_markers",
    "split_reasoning",
]
