"""What the sidebar lists of a conversation: a title made of the user's own words, and the
excerpt of the text around a search match.

Guarantees: `title_of` never takes the title from attached documents (it splits them off
first): the first non-empty line of what the user wrote, blanks collapsed, cut at a word
boundary to at most `limit` characters ending with "…" (only the attached files' names when
the user wrote nothing); `excerpt` gives one line (no line breaks) of `text` around the first
match of any of the searched words, each match in it marked as emphasised, or None when
nothing matches — letters match whatever their case and accents (as the store's full-text
search does), and a match at the start of a word is preferred to one inside a word;
`attached_excerpt` says which attached file a match is in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from app.domain import attachments

Excerpt = tuple[tuple[str, bool], ...]  # (text, emphasised) parts, in order

BEFORE = 24  # characters kept before the match: the sidebar cuts the line's end, not its start
AFTER = 120


def clipped(line: str, limit: int = 60) -> str:
    """`line` on one line, at most `limit` characters, cut at a word boundary with "…"."""
    line = " ".join(line.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"


def title_of(message: str, limit: int = 60) -> str:
    """A new conversation's title from its first message (see the module guarantees)."""
    context, text = attachments.split(message)
    line = next((s for s in text.splitlines() if s.strip()), "")
    if not line.strip():
        line = ", ".join(attachments.files(context)) or "New chat"
    return clipped(line, limit)


def fold(text: str) -> str:
    """`text` lower-cased and without accents, one character for each of `text`'s (so a
    position in one is the same position in the other)."""
    out = []
    for c in text:
        if not c.isascii():
            c = unicodedata.normalize("NFD", c)[0]
        low = c.lower()
        out.append(low if len(low) == 1 else c)
    return "".join(out)


def excerpt(text: str, words: Sequence[str]) -> Excerpt | None:
    """One line of `text` around the first match of any of `words` (module guarantees)."""
    wanted = sorted({fold(w) for w in words if w.strip()}, key=len, reverse=True)
    if not wanted or not text:
        return None
    line = " ".join(text.split())
    folded = fold(line)
    alternatives = "|".join(re.escape(w) for w in wanted)
    first = re.search(rf"(?<!\w)(?:{alternatives})", folded) or re.search(alternatives, folded)
    if first is None:
        return None
    start = max(0, first.start() - BEFORE)
    if start:
        space = line.find(" ", start, first.start())
        start = space + 1 if space >= 0 else start
    end = min(len(line), first.end() + AFTER)
    parts: list[tuple[str, bool]] = [("…", False)] if start else []
    at = start
    for match in re.finditer(alternatives, folded[start:end]):
        a, b = start + match.start(), start + match.end()
        if a > at:
            parts.append((line[at:a], False))
        parts.append((line[a:b], True))
        at = b
    if at < end:
        parts.append((line[at:end], False))
    if end < len(line):
        parts.append(("…", False))
    return tuple(parts)


def attached_excerpt(context: str, words: Sequence[str]) -> Excerpt | None:
    """The excerpt around a match in a message's attached documents, marked 📎 and named by
    the file it is in ("📎 notes.md: … match …"); None without a match."""
    name = ""
    for line in context.splitlines()[1:]:  # the first is the context's own heading
        heading = attachments.files(line)
        if heading:
            name = heading[0]
            found = excerpt(name, words)
            if found is not None:
                return (("📎 ", False), *found)
        elif (found := excerpt(line, words)) is not None:
            return (("📎 " + (f"{name}: " if name else ""), False), *found)
    return None


def plain(found: Excerpt) -> str:
    """An excerpt as plain text (a screen reader's, a tooltip's)."""
    return "".join(text for text, _ in found)


__all__ = ["Excerpt", "attached_excerpt", "clipped", "excerpt", "fold", "plain", "title_of"]
