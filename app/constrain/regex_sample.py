"""The shortest text a regular expression matches (JSON mode's endings for patterned strings).

Guarantees: `matching(pattern, least)` gives a short string that `re.search(pattern, …)`
accepts, at least `least` characters long, built from the pattern's parse (literals, classes,
repeats at their minimum, the shortest branch) and checked with `re` before it is returned;
`Unknown` when the pattern uses what this cannot build (backreferences, lookarounds, …), or
when its shortest match (or `least`) is longer than `MAX_BUILT`: nothing is built in proportion
to a repeat count.
"""

from __future__ import annotations

import re
import re._parser as _re_parser  # type: ignore[import-not-found]
from typing import Any

from app.constrain.limits import MAX_BUILT
from app.errors import HarmonyDeskError


class Unknown(HarmonyDeskError):
    """Asked for a value this cannot make (JSON mode then proposes no ending: it is never
    shown to the user)."""


def least_width(pattern: str) -> int:
    """The fewest characters `pattern` matches, from its parse alone (0 when it cannot be read)."""
    try:
        width: int = _re_parser.parse(pattern).getwidth()[0]
    except (re.error, ValueError, TypeError, IndexError, OverflowError, RecursionError):
        return 0
    return width


def matching(pattern: str, least: int) -> str:
    """A short string the pattern matches (its smallest match, padded to `least` with what the
    pattern accepts), or `Unknown`."""
    try:
        if max(least, least_width(pattern)) > MAX_BUILT:
            raise Unknown(f"pattern {pattern!r} matches nothing shorter than the closer builds")
        text = _shortest(list(_re_parser.parse(pattern)))
    except (re.error, Unknown, ValueError, TypeError, IndexError, OverflowError) as exc:
        raise Unknown(f"pattern {pattern!r}") from exc
    for pad in ("", "a" * max(0, least - len(text)), "0" * max(0, least - len(text))):
        for candidate in (text + pad, pad + text):
            if len(candidate) >= least and re.search(pattern, candidate):
                return candidate
    raise Unknown(f"pattern {pattern!r}")


def _shortest(items: list[Any]) -> str:
    """The shortest text a parsed regular expression (`re._parser`) matches."""
    out = ""
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out += chr(arg)
        elif name == "NOT_LITERAL":
            out += "a" if chr(arg) != "a" else "b"
        elif name == "ANY":
            out += "a"
        elif name == "IN":
            out += _in_class(arg)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = arg
            out += _shortest(list(sub)) * low
        elif name == "SUBPATTERN":
            out += _shortest(list(arg[-1]))
        elif name == "ATOMIC_GROUP":
            out += _shortest(list(arg))
        elif name == "BRANCH":
            out += min((_shortest(list(b)) for b in arg[1]), key=len)
        elif name == "AT":
            continue
        else:
            raise Unknown(f"regex {name}")
    return out


def _in_class(items: list[Any]) -> str:
    """A character a class accepts."""
    names = [str(op) for op, _ in items]
    if "NEGATE" in names:
        banned = {chr(a) for op, a in items if str(op) == "LITERAL"}
        for op, a in items:
            if str(op) == "RANGE":
                banned |= {chr(c) for c in range(a[0], min(a[1], a[0] + 200) + 1)}
        return next(c for c in "aA0b_-" if c not in banned)
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        return chr(arg[0])
    if name == "CATEGORY":
        return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " "}.get(str(arg), "a")
    raise Unknown(f"class {name}")


__all__ = ["Unknown", "matching"]
