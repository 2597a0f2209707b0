"""Text another party wrote (an MCP server's prompt, form, address, name, log line), made inert
before a person sees it, in the terminal or in a dialog.

Guarantees: `inert` returns text that no terminal or text widget acts on and that hides
nothing: every control character (C0 but, where lines are kept, newline and tab; DEL; C1),
so every ANSI/OSC escape sequence, and every invisible or direction-changing character
(Unicode's format characters: the bidi embeddings, overrides and isolates U+202A–U+202E and
U+2066–U+2069, the marks U+200E/U+200F/U+061C, the zero-widths U+200B–U+200D, U+2060 and
U+FEFF, the tag characters; line and paragraph separators; lone surrogates, private-use and
unassigned code points; the variation selectors' supplement; the invisible Hangul fillers)
is shown escaped — `\\x1b` for a control, `<U+202E>` for the rest — never acted on, never
dropped; the rest of the text is kept, in order. It is cut at `limit` characters of the
original with a note of how many more there were ("… (1,234 more characters)"), so a
screenful cannot hide what follows. Without `lines` a newline is shown as `\\n`, so one line
of a server's text cannot pose as the host's next line. The result is plain text: a Qt label
showing it must still be set to plain-text format (`app/ui/mcp/plain.py`), which is the
widget's half of the guarantee.
"""

from __future__ import annotations

import re
import unicodedata

LIMIT = 2000  # characters shown of one piece of another party's text, by default
_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}  # controls, format (bidi, zero-width), …
_FILLERS = {0x115F, 0x1160, 0x3164, 0xFFA0}  # Hangul fillers: letters that draw nothing
_SUSPECT = re.compile(r"[^\x20-\x7e]")  # only these characters need a second look


def _escaped(char: str, lines: bool) -> str:
    point = ord(char)
    if lines and char in "\n\t":
        return char
    if point < 0x20 or 0x7F <= point <= 0x9F:
        return f"\\x{point:02x}"
    invisible = unicodedata.category(char) in _HIDDEN or point in _FILLERS
    if invisible or 0xE0100 <= point <= 0xE01EF:  # variation selectors' supplement
        return f"<U+{point:04X}>"
    return char


def inert(text: str, limit: int = LIMIT, *, lines: bool = False) -> str:
    """`text` made inert and cut at `limit` characters (see the module guarantees); `lines`
    keeps newlines and tabs (a message's body), else they are shown escaped (a name, a title,
    an address)."""
    more = max(0, len(text) - limit)
    kept = text[:limit] if more else text
    shown = _SUSPECT.sub(lambda m: _escaped(m.group(), lines), kept)
    return f"{shown}… ({more:,} more characters)" if more else shown


__all__ = ["LIMIT", "inert"]
