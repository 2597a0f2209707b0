"""Learns a template's call markup (`Markup`) from renderings of sentinel calls.

`Parts` holds what the assistant turn adds (after the generation prompt, before the end of the
turn, its thinking lead removed) for: one call with one string argument (`one`), one call
with two string arguments (`two_args`), the same with a number second (`two_num`), and two
calls (`two_calls`, None where the template allows only one). `learn` compares them: what
surrounds the sentinels is the markup; what surrounds a call in one place and not in another
is a section; what differs from call to call (ids, indices) is a hole; where markup repeats
an argument's name (`<key>value</key>`) it is that argument's name, not a hole. Arguments are
learned as one JSON object, as one piece of markup per argument (XML parameters, `key:value`,
…), or as a pythonic call list (`[name(key='value')]`, read by `Pythonic` between the learned
markers).

Where the generation prompt ends with what the template writes before each call (a second
call's opening the prompt wrote for the first: `opening_of`), the probes are learned again as
that opening's sequel (`reopened`); a name the markup repeats is `KEY` in `call_mid`.

Guarantees: `learn` is pure; it returns a `Markup`, a `PythonicMarkup` or a sentence saying why
the template's calls have no markup this app can read; it never cuts markup inside a `<…>` tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.templates.calls.hermes import tojson
from app.templates.calls.markup import HOLE, KEY, Lit, Markup

NAME_A, NAME_B = "probe_alpha", "probe_beta"
KEY_A, KEY_B, KEY_C = "key_alpha", "key_beta", "key_gamma"
VAL_A, VAL_B, VAL_C, NUM = "val_alpha", "val_beta", "val_gamma", 7391
IDS = ("call_0001", "call_0002")  # nine characters: Mistral's templates insist on it


@dataclass(frozen=True)
class Parts:
    """The assistant's part of each probe rendering (see the module docstring)."""

    one: str
    two_args: str
    two_num: str
    two_calls: str | None


@dataclass(frozen=True)
class PythonicMarkup:
    """A template that writes a turn's calls as a pythonic call list between two markers."""

    open: str
    close: str


def probes() -> dict[str, list[tuple[str, dict[str, object]]]]:
    """The calls of each probe, by `Parts` field."""
    return {
        "one": [(NAME_A, {KEY_A: VAL_A})],
        "two_args": [(NAME_A, {KEY_A: VAL_A, KEY_B: VAL_B})],
        "two_num": [(NAME_A, {KEY_A: VAL_A, KEY_B: NUM})],
        "two_calls": [(NAME_A, {KEY_A: VAL_A}), (NAME_B, {KEY_C: VAL_C})],
    }


def _holed(text: str) -> str:
    for i in IDS:
        text = text.replace(i, HOLE)
    return text


def _inside_tag(text: str) -> bool:
    return text.rfind("<") > text.rfind(">")


def cprefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    while n and _inside_tag(a[:n]):
        n -= 1
    return a[:n]


def csuffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    while n and (_inside_tag(a[: len(a) - n]) or a[len(a) - n - 1 : len(a) - n] == HOLE):
        n -= 1
    return a[len(a) - n :] if n else ""


def _cut_badly(before: str) -> bool:
    """Whether markup that starts after `before` would cut a tag or follow a hole."""
    return _inside_tag(before) or before.endswith(HOLE)


def _pieces(text: str) -> list[str]:
    """`text` as runs of digits and single other characters."""
    return re.findall(r"\d+|\D", text, re.DOTALL)


def tail(a: str, b: str) -> tuple[str, int, int]:
    """The markup `a` and `b` end with, a run of digits that differs between them (an index)
    taken as a hole: (that markup, how much of `a` it takes, how much of `b`)."""
    pa, pb = _pieces(a), _pieces(b)
    n = 0
    while n < min(len(pa), len(pb)):
        x, y = pa[-1 - n], pb[-1 - n]
        if x != y and not (x.isdigit() and y.isdigit()):
            break
        n += 1
    while n and (pa[-n] != pb[-n] or _cut_badly("".join(pa[: len(pa) - n]))):
        n -= 1  # it starts with neither a hole nor inside a tag or an id
    took = pa[len(pa) - n :]
    text = "".join(x if x == y else HOLE for x, y in zip(took, pb[len(pb) - n :], strict=True))
    return text, len("".join(took)), len("".join(pb[len(pb) - n :]))


def _cut(text: str, *marks: str) -> list[str] | None:
    """`text` split at each mark in order (the text between them), None when one is missing."""
    out, pos = [], 0
    for mark in marks:
        at = text.find(mark, pos)
        if at < 0:
            return None
        out.append(text[pos:at])
        pos = at + len(mark)
    return [*out, text[pos:]]


def _calls(parts: Parts, arguments: list[str]) -> tuple[str, str, str, list[str], str] | str:
    """(A, B, C, [B of the second call], X) of the JSON or per-key rendering."""
    one = _cut(_holed(parts.one), NAME_A, arguments[0])
    if one is None:
        return "the template does not write a call's name and arguments where they can be found"
    a, b, c = one
    mids, x = [b], ""
    if parts.two_calls is not None:
        two = _cut(_holed(parts.two_calls), NAME_A, arguments[0], NAME_B, arguments[1])
        if two is None:
            return "the template writes a second call differently from the first"
        _, b1, x, b2, c2 = two
        if b1 != b or c2 != c:
            return "the template writes a second call differently from the first"
        mids.append(b2.replace(NAME_B, KEY))
    return a.replace(NAME_A, HOLE), b, c, [mids[0].replace(NAME_A, KEY), *mids[1:]], x


def _sections(a: str, c: str, x: str | None) -> tuple[str, str, str, str, str]:
    """(section_open, call_open, call_close, call_sep, section_close) from A, C and X."""
    if x is None:
        return "", a, c, "", ""
    close = cprefix(c, x)
    open_, in_a, in_x = tail(a, x[len(close) :])
    sep = x[len(close) : len(x) - in_x]
    return a[: len(a) - in_a], open_, close, sep, c[len(close) :]


_PYTHONIC = re.compile(
    rf"(?P<open>.*?)\[?\s*{NAME_A}\({KEY_A}=(?P<q>['\"]){VAL_A}(?P=q)\)\s*\]?(?P<close>.*)",
    re.DOTALL,
)


def learn(parts: Parts) -> Markup | PythonicMarkup | str:
    """The markup of the template's calls, or why it has none this app can read."""
    json_args = [tojson({KEY_A: VAL_A}), tojson({KEY_C: VAL_C})]
    pythonic = _PYTHONIC.fullmatch(parts.one)
    if pythonic is not None:
        return _learn_pythonic(pythonic)
    if json_args[0] in parts.one:
        return _learn_json(parts, json_args)
    if KEY_A in parts.one and VAL_A in parts.one:
        return _learn_keyed(parts)
    return "the template writes no call's arguments, as JSON or key by key, that can be found"


def opening_of(markup: Markup, prompt: str) -> str:
    """Markup the generation prompt (`prompt`) ends with that the template writes before every
    lone call ("" for none): the end of what it writes between two calls, where the prompt
    ends with it. The prompt wrote the first call's; a model's answer continues it."""
    if markup.sectioned:
        return ""
    return csuffix(markup.call_sep.parts[-1], prompt).lstrip()


def reopened(parts: Parts, opening: str) -> Parts:
    """The probes' renderings as a model's turn reads with `opening` (which the prompt wrote)
    before it."""
    two_calls = None if parts.two_calls is None else opening + parts.two_calls
    return Parts(opening + parts.one, opening + parts.two_args, opening + parts.two_num, two_calls)


def continued_tags(tags: tuple[str, str], opening: str) -> tuple[str, str]:
    """Reasoning tags as a format whose answer continues `opening` reads them: a close that
    runs on into the next message (`<|eom|><|start|>assistant to=`) ends where that message's
    `opening` begins, and what follows the opening opens the reasoning (` to=self<|message|>`);
    other tags as they are."""
    close = tags[1]
    at = close.find(opening)
    if at <= 0:
        return tags
    return close[at + len(opening) :] + tags[0], close[:at]


def think_tags(opening: str) -> tuple[str, str]:
    """The think tags of a template whose assistant turn opens with `opening` (an empty think
    block, or the close of one): `<think>`/`</think>` unless it shows others."""
    words = opening.split()
    if len(words) == 2 and all(w.startswith("<") or w.endswith(">") for w in words):
        return words[0], words[1]
    if len(words) == 1 and words[0].startswith("</") and words[0].endswith(">"):
        return "<" + words[0][2:], words[0]
    return "<think>", "</think>"


def _learn_pythonic(found: re.Match[str]) -> PythonicMarkup | str:
    opening, closing = found.group("open").strip(), found.group("close").strip()
    if not opening or not closing:
        return "the template writes a pythonic call list with no markers around it"
    return PythonicMarkup(opening, closing)


def _learn_json(parts: Parts, json_args: list[str]) -> Markup | str:
    found = _calls(parts, json_args)
    if isinstance(found, str):
        return found
    a, _, c, mids, x = found
    s_open, c_open, c_close, sep, s_close = _sections(a, c, x if parts.two_calls else None)
    return Markup(
        Lit.of(s_open), Lit.of(c_open), Lit.of(*mids), Lit.of(c_close), Lit.of(sep), Lit.of(s_close)
    )


def _learn_keyed(parts: Parts) -> Markup | str:
    one = _cut(_holed(parts.one), NAME_A, KEY_A, VAL_A)
    two = _cut(_holed(parts.two_args), NAME_A, KEY_A, VAL_A, KEY_B, VAL_B)
    num = _cut(_holed(parts.two_num), NAME_A, KEY_A, VAL_A, KEY_B, str(NUM))
    if one is None or two is None or num is None:
        return "the template writes a call's arguments in an order that cannot be followed"
    a, b, k, c = one
    y, k2, k2n, c2n = two[3], two[4], num[4], num[5]
    q_open = k2[len(k2n) :] if k2.startswith(k2n) and k2 != k2n else ""
    q_close = two[5][: len(two[5]) - len(c2n)] if q_open and two[5].endswith(c2n) else ""
    strip = len(q_close)
    c, y = c[strip:].replace(KEY_A, KEY), y[strip:].replace(KEY_A, KEY)
    p_close = cprefix(c, y)
    p_open = csuffix(b, y[len(p_close) :])
    p_sep = y[len(p_close) : len(y) - len(p_open)]
    mid_variants = [k.removesuffix(q_open), k2n] if q_open else [k, k2, k2n]
    rest = c[len(p_close) :]
    x: str | None = None
    mids = [b[: len(b) - len(p_open)].replace(NAME_A, KEY)]
    if parts.two_calls is not None:
        calls = _cut(_holed(parts.two_calls), NAME_A, KEY_A, VAL_A, NAME_B, KEY_C, VAL_C)
        if calls is None:
            return "the template writes a second call differently from the first"
        x = calls[3][len(q_close) :].replace(KEY_A, KEY)
        if not x.startswith(p_close):
            return "the template closes an argument differently before a second call"
        x = x[len(p_close) :]
        mids.append(calls[4][: len(calls[4]) - len(p_open)].replace(NAME_B, KEY))
    s_open, c_open, c_close, sep, s_close = _sections(a.replace(NAME_A, HOLE), rest, x)
    if not Lit.of(*mid_variants).text.strip():
        return "the template writes nothing between an argument's name and its value"
    return Markup(
        Lit.of(s_open),
        Lit.of(c_open),
        Lit.of(*mids),
        Lit.of(c_close),
        Lit.of(sep),
        Lit.of(s_close),
        True,
        Lit.of(p_open),
        Lit.of(*mid_variants),
        Lit.of(p_close),
        Lit.of(p_sep),
        q_open,
        q_close,
    )


__all__ = [
    "IDS",
    "NAME_A",
    "NAME_B",
    "Parts",
    "PythonicMarkup",
    "continued_tags",
    "learn",
    "opening_of",
    "probes",
    "reopened",
    "tail",
    "think_tags",
]
