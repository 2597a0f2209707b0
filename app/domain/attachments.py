"""How a message carries attached documents: the documents first, a rule, then what the user
wrote — one layout, made here and read here. The rule is a line no ordinary text has; should
a user's own text hold it, the message splits at its last one.

Guarantees: `compose` puts the context before the text with a rule between them; `split`
gives back (the context, the text) of a message composed that way, and ("", the message) for
any other; `files` names the attached files, in order, from the context's headings, and
`passages` gives back the numbered passages (file, page or lines, text); `estimated_room` is
the budget for a model whose tokenizer is not the app's (a remote endpoint): about four
characters a token in a context of 8,192.
"""

from __future__ import annotations

import re

RULE = "\n\n--- end of the attached documents ---\n\n"
HEAD = "Attached documents."
_FILE = re.compile(
    r"^(?:Document: (?P<whole>.+?) \(whole file\)|\[\d+\] (?P<part>.+?), [^,\n]+:)$", re.M
)


_PASSAGE = re.compile(r"\[(?P<n>\d+)\] (?P<file>.+?), (?P<where>[^,\n]+):\n(?P<text>.*)\Z", re.S)


ESTIMATED_CONTEXT = 8192


def estimate(text: str) -> int:
    """About how many tokens `text` is for a tokenizer the app does not hold."""
    return len(text) // 4 + 1


def estimated_room(text: str, reserve: int) -> int:
    """The tokens left for a message's documents, estimated (see the module guarantees)."""
    return max(0, ESTIMATED_CONTEXT - estimate(text) - reserve)


def compose(context: str, text: str) -> str:
    return f"{context}{RULE}{text}" if context else text


def split(message: str) -> tuple[str, str]:
    if message.startswith(HEAD) and RULE in message:
        context, _, text = message.rpartition(RULE)
        return context, text
    return "", message


def passages(context: str) -> dict[int, tuple[str, str, str]]:
    """The numbered passages of a context: n → (file, where, text)."""
    out: dict[int, tuple[str, str, str]] = {}
    blocks = context.split("\n\n[")
    for block in blocks[1:]:
        m = _PASSAGE.match("[" + block)
        if m is not None:
            out[int(m.group("n"))] = (m.group("file"), m.group("where"), m.group("text"))
    return out


def files(context: str) -> list[str]:
    names: dict[str, None] = {}
    for m in _FILE.finditer(context):
        names.setdefault(m.group("whole") or m.group("part"))
    return list(names)


__all__ = [
    "HEAD",
    "RULE",
    "compose",
    "estimate",
    "estimated_room",
    "files",
    "passages",
    "split",
]
