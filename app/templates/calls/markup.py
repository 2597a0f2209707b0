"""The markup a learned call format reads (`Lit`, `Markup`): what a chat template was seen to
write around a call's name and arguments (see `app/templates/calls/derived.py`).

Guarantees: values only (frozen); a `Lit` matches the text it was learned from and, at each
hole, any short run of text on one line; a `Lit` that repeats an argument's name (`KEY`)
matches that name exactly when given it; runs of whitespace in markup match any run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HOLE = "\ue010"  # where call-to-call text (an id, an index) was in a rendering
KEY = "\ue011"  # where per-key markup repeats the argument's name
ARG_NAME = re.compile(r"[\w.\-]+")  # an argument's name, as the reader takes it
UNITS = re.compile(r"(<\|[^|<>\s]*\|>)")  # a `<|…|>` unit in markup: maybe one token


@dataclass(frozen=True)
class Lit:
    """Markup text; `parts` are its literal pieces, a hole between each two."""

    parts: tuple[str, ...] = ("",)
    sample: str = ""  # one rendering of it, holes filled

    @classmethod
    def of(cls, *variants: str) -> Lit:
        """The markup that matches every variant (the text where they differ is a hole)."""
        first = variants[0]
        if all(v == first for v in variants):
            return cls(tuple(first.split(HOLE)), first.replace(HOLE, ""))
        head = _common_prefix(list(variants))
        tail = _common_suffix([v[len(head) :] for v in variants])
        return cls(tuple(f"{head}{HOLE}{tail}".split(HOLE)), first.replace(HOLE, ""))

    @property
    def text(self) -> str:
        return HOLE.join(self.parts)

    def pattern(self, key: str | None = None, named: str | None = None) -> str:
        """The regular expression it matches (`key`: the argument whose name it repeats;
        `named`: a regular expression that stands where it repeats it, such as a backreference)."""
        if named is None:
            named = "[^\\n]*?" if key is None else re.escape(key)
        return "[^\\n]*?".join(named.join(_loose(k) for k in p.split(KEY)) for p in self.parts)

    def lead(self) -> str:
        """The literal text it starts with (up to its first hole)."""
        return self.parts[0]

    def filled(self, key: str = "") -> str:
        """Its sample with the argument's name where it repeats it."""
        return self.sample.replace(KEY, key)


def _loose(text: str) -> str:
    """`text` as a regular expression in which each run of whitespace may be any run."""
    return "".join("\\s*" if s.isspace() else re.escape(s) for s in re.split(r"(\s+)", text) if s)


def _common_prefix(items: list[str]) -> str:
    n = 0
    while all(len(s) > n and s[n] == items[0][n] for s in items):
        n += 1
    return items[0][:n]


def _common_suffix(items: list[str]) -> str:
    return _common_prefix([s[::-1] for s in items])[::-1]


@dataclass(frozen=True)
class Markup:
    """What a template writes around its calls (see `app/templates/calls/derived.py`)."""

    section_open: Lit
    call_open: Lit
    call_mid: Lit
    call_close: Lit
    call_sep: Lit
    section_close: Lit
    per_key: bool = False
    param_open: Lit = Lit()
    param_mid: Lit = Lit()
    param_close: Lit = Lit()
    param_sep: Lit = Lit()
    quote_open: str = ""
    quote_close: str = ""

    @property
    def sectioned(self) -> bool:
        return bool(self.section_open.text.strip())

    @property
    def opening(self) -> Lit:
        """The markup a turn's calls open with."""
        return self.section_open if self.sectioned else self.call_open

    def trigger(self) -> str:
        """Where a call begins: the opening markup's first literal word."""
        head = self.opening.lead().strip()
        return head.split(None, 1)[0] if head else ""


__all__ = ["ARG_NAME", "HOLE", "KEY", "UNITS", "Lit", "Markup"]
