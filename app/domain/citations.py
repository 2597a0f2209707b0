"""Citations in an answer: the `[n]` marks that point at the numbered passages a message
carried.

Guarantees: a mark is `[n]` (or `[n, m]`, `[n–m]` ranges expanded) with n a passage number
that exists; marks inside code spans and fenced code blocks are not citations; each passage is
cited once, in the order of its first mark.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_MARK = re.compile(r"\[(\d+(?:\s*[,–-]\s*\d+)*)\]")


def cited(answer: str, count: int) -> list[int]:
    """The passage numbers (1…`count`) the answer cites, in order of first mention."""
    seen: dict[int, None] = {}
    for mark in _MARK.finditer(_CODE.sub(" ", answer)):
        for part in mark.group(1).split(","):
            ends = [int(n) for n in re.split(r"\s*[–-]\s*", part.strip())]
            for n in (
                range(ends[0], ends[-1] + 1) if len(ends) == 2 and ends[1] - ends[0] < 50 else ends
            ):
                if 1 <= n <= count:
                    seen.setdefault(n)
    return list(seen)


__all__ = ["cited"]
