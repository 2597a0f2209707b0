"""Template markup a model echoed into its answer: a tool result's wrapper, found as it streams.

Small models sometimes answer by repeating the last tool result the way their template wrapped
it — `<tool_response>{"ok": true, …}</tool_response>` — as ordinary text. That markup is the
template's, not the model's words: it must not reach the user raw, and since it streams, it is
held back from where it may begin until it closes or the message ends.

Guarantees: `PAIRS` lists the tool-result wrappers of the templates the app reads (Hermes and
Qwen's `<tool_response>`, Gemma 4's `<|tool_response>`, DeepSeek's tool-output markers, Command
R's `<|START_TOOL_RESULT|>`, `<tool_result>` and `<tool_output>`); `split(answer)` cuts an
answer into what is shown and the echoed blocks: a block runs from an opening wrapper to its
closing one (or to the end of the answer when it never closes); its wrappers are taken out and
its words kept in place (nothing the model wrote is lost: the reply flags the echo in a notice),
a closing wrapper alone is dropped too, and the rest of the answer is kept, in order;
`settle(text)` is the streaming side: complete blocks' wrappers and stray closers out of `text`,
and where in what is left to hold back from (an open block, or a tail that may still grow into
a wrapper). Nothing else is ever touched: text with no wrapper comes back as it was.
"""

from __future__ import annotations

import re

PAIRS: tuple[tuple[str, str], ...] = (
    ("<tool_response>", "</tool_response>"),
    ("<|tool_response>", "<tool_response|>"),
    ("<tool_result>", "</tool_result>"),
    ("<tool_output>", "</tool_output>"),
    ("<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"),
    ("<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>"),
)
_WRAPPERS = tuple(w for pair in PAIRS for w in pair)
_LONGEST = max(len(w) for w in _WRAPPERS)
_OPEN = re.compile("|".join(re.escape(o) for o, _ in PAIRS))
_CLOSER = {o: c for o, c in PAIRS}
_STRAY = re.compile("|".join(re.escape(c) for _, c in PAIRS))


def _blocks(text: str, *, to_end: bool) -> tuple[str, list[str], int]:
    """`text` with its closed blocks' wrappers (and, when `to_end`, an unclosed last one's)
    taken out, their inner texts kept in place; the blocks' inner texts; where an unclosed
    block begins in what is kept (or -1)."""
    kept: list[str] = []
    echoed: list[str] = []
    at = 0
    while (found := _OPEN.search(text, at)) is not None:
        kept.append(text[at : found.start()])
        closer = _CLOSER[found.group()]
        end = text.find(closer, found.end())
        if end < 0:
            if to_end:
                echoed.append(text[found.end() :].strip())
                return "".join([*kept, echoed[-1]]), echoed, -1
            rest = "".join(kept)
            return rest + text[found.start() :], echoed, len(rest)
        echoed.append(text[found.end() : end].strip())
        kept.append(echoed[-1])  # the words stay; only the template's wrapper goes
        at = end + len(closer)
    kept.append(text[at:])
    return "".join(kept), echoed, -1


def split(answer: str) -> tuple[str, list[str]]:
    """(what is shown, the echoed blocks' texts) of a finished answer; ([] when none)."""
    kept, echoed, _ = _blocks(answer, to_end=True)
    stray = _STRAY.sub("", kept)
    if not echoed and stray == kept:
        return answer, []
    return _tidy(stray), echoed


def _tidy(text: str) -> str:
    """Blank lines left where a block was taken out, closed up."""
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _tail_from(text: str) -> int:
    """Where a tail of `text` that may still grow into a wrapper begins (`len(text)`: none)."""
    start = max(0, len(text) - _LONGEST + 1)
    for i in range(start, len(text)):
        if text[i] == "<" and any(w.startswith(text[i:]) for w in _WRAPPERS):
            return i
    return len(text)


def settle(text: str) -> tuple[str, int]:
    """Newly streamed answer `text` (with what was held before it): its complete blocks and
    stray closers taken out, and the index in the result from which to hold back."""
    kept, _, open_at = _blocks(text, to_end=False)
    if open_at >= 0:
        head = _STRAY.sub("", kept[:open_at])
        return head + kept[open_at:], len(head)
    kept = _STRAY.sub("", kept)
    return kept, _tail_from(kept)


def echo_notice(echoed: list[str]) -> str:
    """What the reply says of echoed blocks (not model words: a notice)."""
    excerpt = " ".join(echoed)[:200]
    more = "…" if len(" ".join(echoed)) > 200 else ""
    return (
        "The model repeated a tool result in its template's markup instead of answering in"
        f" its own words; the markup is taken out. It repeated: {excerpt}{more}"
    )


__all__ = ["PAIRS", "echo_notice", "settle", "split"]
