"""A tool call the model wrote as ordinary text inside an answer (W34), found as it streams.

gpt-oss sometimes spells a call out — `to=functions.read <|constrain|>json<|message|>{...}` —
in ordinary tokens inside a final answer. Such text must not reach the user as the answer, and
since it streams, it must be held back from where it may begin until the message decides.

Guarantees: `held_from(shown, text)` says where in newly streamed `text` such a call may begin
(at the start of the answer or after whitespace): from a whole `to=functions.` on, or a tail
that may still grow into one; `split(answer)` cuts a finished answer into what is shown and the
textual call, if any.
"""

from __future__ import annotations

import re

START = "to=functions."
_CALL = re.compile(r"(?:^|(?<=\s))to=functions\.")


def held_from(shown: str, text: str) -> int:
    """The index in `text` (which follows the already shown `shown`) from which to hold back;
    `len(text)` when nothing needs holding."""
    context = shown[-1:]
    match = _CALL.search(context + text)
    if match is not None:
        return max(0, match.start() - len(context))
    for size in range(min(len(text), len(START) - 1), 0, -1):
        tail, before = text[-size:], (context + text)[-size - 1 : -size]
        if START.startswith(tail) and (not before or before.isspace()):
            return len(text) - size
    return len(text)


def split(answer: str) -> tuple[str, str]:
    """(what is shown, the textual call or "") of a finished answer."""
    match = _CALL.search(answer)
    if match is None:
        return answer, ""
    return answer[: match.start()].rstrip(), answer[match.start() :].strip()


__all__ = ["held_from", "split"]
