"""Harmony markup that arrives as text: servers that pass gpt-oss output through unparsed
(`<|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…`).

Guarantees: `feed` takes text in any chunking and returns the pieces in order: a message starts
(its channel, recipient and content type, read from the header), body text, a message ends;
nothing of a header or a marker is ever body text, and a marker split across chunks is held back
until it is whole; text before any header belongs to a `final` message (what such a server
sends when the model skipped the format). `finish` closes what is open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKERS = ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>")
_ENDS = ("<|end|>", "<|return|>", "<|call|>")
_HEADER = re.compile(
    r"(?:assistant)?\s*(?:<\|channel\|>(?P<channel>[^\s<]+))?"
    r"(?:\s*to=(?P<to>[^\s<]+))?\s*(?:<\|constrain\|>(?P<ctype>[^\s<]+))?",
)


@dataclass(frozen=True)
class Started:
    channel: str
    recipient: str | None
    content_type: str | None


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Ended:
    complete: bool


Piece = Started | Text | Ended


class HarmonyText:
    """An incremental reader of Harmony markup given as text."""

    def __init__(self) -> None:
        self.buffer = ""
        self.in_body = False
        self.open = False

    def feed(self, text: str) -> list[Piece]:
        self.buffer += text
        out: list[Piece] = []
        while True:
            if self.in_body:
                end = _first(self.buffer, _ENDS)
                if end is None:
                    keep = _partial_marker(self.buffer)
                    body, self.buffer = (
                        self.buffer[: len(self.buffer) - keep],
                        self.buffer[len(self.buffer) - keep :],
                    )
                    if body:
                        out.append(Text(body))
                    return out
                at, marker = end
                if at:
                    out.append(Text(self.buffer[:at]))
                out.append(Ended(True))
                self.buffer = self.buffer[at + len(marker) :]
                self.in_body = self.open = False
                continue
            at_message = self.buffer.find("<|message|>")
            if at_message < 0:
                head = self.buffer.lstrip()
                if not head or head.startswith("<|") or any(m.startswith(head) for m in MARKERS):
                    return out  # a header still arriving
                # plain text where a header should be: an answer without the format
                out.append(Started("final", None, None))
                self.in_body = self.open = True
                continue
            header = self.buffer[:at_message].replace("<|start|>", " ")
            m = _HEADER.search(header.strip())
            channel = (m.group("channel") if m else None) or "final"
            recipient = m.group("to") if m else None
            ctype = f"<|constrain|>{m.group('ctype')}" if m and m.group("ctype") else None
            out.append(Started(channel, recipient, ctype))
            self.buffer = self.buffer[at_message + len("<|message|>") :]
            self.in_body = self.open = True

    def finish(self, complete: bool = False) -> list[Piece]:
        """Close what is open: `complete` when the stream ended normally (servers drop the
        final `<|return|>`), else the message is marked cut."""
        out: list[Piece] = []
        if self.in_body and self.buffer:
            out.append(Text(self.buffer))
        if self.open:
            out.append(Ended(complete))
        self.buffer, self.in_body, self.open = "", False, False
        return out


def _first(text: str, markers: tuple[str, ...]) -> tuple[int, str] | None:
    found = [(text.find(m), m) for m in markers if m in text]
    return min(found) if found else None


def _partial_marker(text: str) -> int:
    """How many characters at the end of `text` could be the start of a marker."""
    for size in range(min(len(text), max(len(m) for m in MARKERS) - 1), 0, -1):
        tail = text[-size:]
        if any(m.startswith(tail) for m in MARKERS):
            return size
    return 0


__all__ = ["Ended", "HarmonyText", "Piece", "Started", "Text"]
