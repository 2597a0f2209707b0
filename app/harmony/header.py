"""Message-header interpretation: the reference rules, and the tolerant rules for real output.

`reference_header` applies openai-harmony 0.0.8's header rules exactly (strict mode).
`tolerant_header` reads what gpt-oss really writes (the W01–W14 cases of the research
catalogue): `to=` before or after the channel, duplicated or glued recipients, content-type
spellings, repeated or garbled channels, a repeated role word. Neither function raises: a
problem comes back as a message in `problems`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from app.domain.messages import CHANNELS, Role
from app.harmony import encoding as enc

CONSTRAIN_TEXT = "<|constrain|>"
CHANNEL_TEXT = "<|channel|>"
_ROLES = {r.value: r for r in Role}
_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_CTYPE = re.compile(r"^[A-Za-z0-9_.+/-]{1,40}$")


@dataclass
class Header:
    """The fields of one message header."""

    role: Role
    name: str | None = None
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    channel_raw: str | None = None  # an unrecognised channel word, kept for diagnostics
    body: str = ""  # text that was not header (salvaged malformed headers)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # recovered noise, not a problem (W09)


# --- the reference rules ------------------------------------------------------------------

# What openai-harmony (Rust: `char::is_whitespace`, Unicode's White_Space) takes for a space.
# Python's `str.isspace` also takes the separators U+001C..U+001F, which the reference keeps
# as part of a word (a header `\x1c` is a recipient there).
_WHITE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)
_WORDS = re.compile(f"[^{re.escape(_WHITE)}]+")


def _words(text: str) -> list[str]:
    """`text` split as the reference splits a header."""
    return _WORDS.findall(text)


def reference_header(text: str, role: Role | None, parse_attrs: bool = True) -> Header | str:
    """The header as openai-harmony reads it, or the reference's error text."""
    taken = _reference_channel(text)
    if isinstance(taken, str):
        return taken
    channel, text = taken
    text = text.strip(_WHITE)
    if CONSTRAIN_TEXT in text:
        text = text.replace(CONSTRAIN_TEXT, f" {CONSTRAIN_TEXT}").strip(_WHITE)
    parts = _words(text)
    role_word = None
    if role is None:
        found = _reference_role(parts)
        if isinstance(found, str):
            return found
        role, role_word = found
    if parts and parts[0] == role.value:
        parts.pop(0)
    header = Header(role=role, channel=channel)
    if role is Role.TOOL:
        header.name = role_word
    if parse_attrs and parts:
        _reference_attributes(header, parts)
    if parts:
        header.body = " ".join(parts)
        if parse_attrs:
            return f"unexpected tokens remaining in message header: {header.body!r}"
    return header


def _reference_channel(text: str) -> tuple[str | None, str] | str:
    """(the channel, the text without it), or the reference's error text."""
    idx = text.find(CHANNEL_TEXT)
    if idx < 0:
        return None, text
    after = text[idx + len(CHANNEL_TEXT) :]
    end = next((i for i, c in enumerate(after) if c in _WHITE or c == "<"), len(after))
    if end == 0:
        return "channel marker present but no channel value found in header"
    return after[:end], text[:idx] + after[end:]


def _reference_role(parts: list[str]) -> tuple[Role, str] | str:
    """The role the header's first word names (taken off `parts` when it names a tool), and
    that word; or the reference's error text."""
    if not parts:
        return "message header did not contain a role"
    role_word = parts[0]
    if role_word in _ROLES:
        return _ROLES[role_word], role_word
    if len(parts) > 1 or parts[0].startswith("to="):
        parts.pop(0)
        return Role.TOOL, role_word
    return f"Unknown role: {role_word}"


def _reference_attributes(header: Header, parts: list[str]) -> None:
    """Recipient and content type from the end of the (non-empty) `parts`, taken off it."""
    count = len(parts)
    last = parts.pop()
    if last.startswith("to="):
        header.recipient = last[3:]
    elif count == 1:
        # openai-harmony 0.0.8 reads a lone `<|constrain|>json` as a recipient too (its
        # issue #144); strict mode keeps that, the tolerant rules read a content type.
        header.recipient = last
    else:
        header.content_type = last
        if parts:
            raw = parts.pop()
            header.recipient = raw[3:] if raw.startswith("to=") else raw


# --- the tolerant rules -------------------------------------------------------------------


def normalize_header_text(text: str) -> str:
    """NFKC, Unicode spaces to ASCII spaces, dashes to '-'."""
    text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    return "".join(" " if c.isspace() else c for c in text)


def match_channel(word: str) -> str | None:
    """The channel a (possibly garbled) channel word means, or None."""
    letters = "".join(c for c in word.lower() if "a" <= c <= "z")
    if not letters:
        return None
    if letters in CHANNELS:
        return letters
    candidates = [c for c in CHANNELS if c.startswith(letters) or letters.startswith(c)]
    if len(candidates) == 1 and len(letters) >= 3:
        return candidates[0]
    close = [c for c in CHANNELS if _distance(letters, c) <= 2]
    return close[0] if len(close) == 1 else None


def _distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def resolve_recipient(raw: str, known_tools: Collection[str]) -> str:
    """A recipient as the app names tools (W02e glued `json`, W05 bare function names)."""
    if not known_tools or raw in known_tools:
        return raw
    if f"functions.{raw}" in known_tools:
        return f"functions.{raw}"
    for suffix in ("json", "code"):
        stem = raw.removesuffix(suffix)
        if stem != raw and stem in known_tools:
            return stem
        if stem != raw and f"functions.{stem}" in known_tools:
            return f"functions.{stem}"
    return raw


Segment = int | str  # a special-token id, or the text of a run of ordinary tokens


def _strip_role_word(word: str, role: Role) -> str:
    while word.startswith(role.value):
        word = word[len(role.value) :]
    return word


@dataclass
class _Reader:
    role: Role | None
    known_tools: Collection[str]
    channels: list[str] = field(default_factory=list)
    recipients: list[str] = field(default_factory=list)
    ctypes: list[str] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)
    name: str | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def role_word(self, words: list[str]) -> list[str]:
        """Consume the role word at the head of `words`; return the words left."""
        word = words[0]
        if self.role is not None:
            rest = _strip_role_word(word, self.role)
            if rest == word:
                return words
            if word != self.role.value:
                self.problems.append(f"repeated role word {word!r}")
            return [rest, *words[1:]] if rest else words[1:]
        if word in _ROLES:
            self.role = _ROLES[word]
        elif word.startswith(Role.ASSISTANT.value) and not _strip_role_word(word, Role.ASSISTANT):
            self.role = Role.ASSISTANT
            self.problems.append(f"repeated role word {word!r}")
        else:
            self.role = Role.TOOL
            self.name = word
        return words[1:]

    def words(self, words: Sequence[str], slot: int | None) -> None:
        for i, word in enumerate(words):
            if i == 0 and slot == enc.CHANNEL:
                self.channels.append(word)
            elif i == 0 and slot == enc.CONSTRAIN:
                self.ctypes.append(CONSTRAIN_TEXT + word)
            elif word.startswith("to="):
                if len(word) > 3:
                    self.recipients.append(word[3:])
            elif _CTYPE.match(word) and i == len(words) - 1 and not self.prose:
                self.ctypes.append(word)
            else:
                self.prose.append(word)


def _choose_recipient(reader: _Reader, role: Role) -> str | None:
    found: list[str] = []
    for raw in reader.recipients:
        name = resolve_recipient(raw, reader.known_tools)
        if role is Role.ASSISTANT and name == "assistant":
            reader.notes.append("dropped `to=assistant` in an assistant header")  # W09: noise
            continue
        if name not in found:
            found.append(name)
        else:
            reader.problems.append(f"recipient {name!r} given twice")  # W07
    if len(found) > 1:
        known = [n for n in found if n in reader.known_tools]
        reader.problems.append(f"several recipients {found}")
        return known[0] if known else found[0]
    return found[0] if found else None


def _choose_content_type(reader: _Reader) -> str | None:
    kept = []
    for ctype in reader.ctypes:
        word = ctype.removeprefix(CONSTRAIN_TEXT)
        if not word or word.lower() in CHANNELS:
            reader.problems.append(f"dropped content type {ctype!r}")
            continue
        kept.append(ctype)
    if len(kept) > 1:
        reader.problems.append(f"content type given {len(kept)} times: {kept}")
    return kept[-1] if kept else None


def tolerant_header(
    segments: Sequence[Segment], role: Role | None, known_tools: Collection[str] = ()
) -> Header:
    """Read a header given as text runs and special ids, however the model spelled it."""
    reader = _Reader(role=role, known_tools=known_tools)
    expect_role = True
    slot: int | None = None
    for seg in segments:
        if isinstance(seg, int):
            if seg == enc.START:
                expect_role = not (reader.channels or reader.recipients)
            elif seg in (enc.CHANNEL, enc.CONSTRAIN):
                if seg == enc.CONSTRAIN and slot == enc.CONSTRAIN:
                    reader.problems.append("repeated <|constrain|>")
                slot = seg
                expect_role = False
            else:
                reader.problems.append(f"control token {seg} inside a header")
            continue
        words = normalize_header_text(seg).split()
        if words and expect_role:
            words = reader.role_word(words)
        expect_role = expect_role and not words
        if words:
            reader.words(words, slot)
            slot = None
    return _finish(reader)


def _finish(reader: _Reader) -> Header:
    role = reader.role or Role.ASSISTANT
    header = Header(role=role, name=reader.name if role is Role.TOOL else None)
    valid = [c for c in (match_channel(w) for w in reader.channels) if c is not None]
    if valid:
        header.channel = valid[-1]
        stray = len(reader.channels) == 2 and reader.channels[0] == "commentary"  # W09
        for word in reader.channels[:-1]:
            if word == header.channel:
                reader.problems.append(f"channel {word!r} given twice")  # W06
            elif stray and header.channel != "commentary":
                reader.notes.append(f"stray channel {word!r} before {header.channel!r}")
            else:
                reader.problems.append(f"channel word {word!r} read as {header.channel!r}")
        if reader.channels[-1] != header.channel:
            reader.problems.append(
                f"channel word {reader.channels[-1]!r} read as {header.channel!r}"
            )
    elif reader.channels:
        header.channel_raw = reader.channels[-1]
        reader.problems.append(f"unknown channel {header.channel_raw!r}")
    for word in reader.channels:
        if match_channel(word) is None and not reader.recipients and word in reader.known_tools:
            reader.recipients.append(word)  # W06: a tool name in the channel slot
    header.recipient = _choose_recipient(reader, role)
    if header.recipient is not None and header.channel == "final":  # W08: a call is no answer
        reader.problems.append("a tool call on the final channel, kept on commentary")
        header.channel = "commentary"
    header.content_type = _choose_content_type(reader)
    header.body = " ".join(reader.prose)
    header.problems = reader.problems
    header.notes = reader.notes
    return header
