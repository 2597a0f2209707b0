"""Per-message body text: UTF-8 bytes of ordinary tokens decoded incrementally.

Guarantees: a character split across tokens is held back until it is complete, never
dropped or replaced mid-stream; invalid bytes become U+FFFD; each message has its own
decoder, so pending bytes never leak into the next message.
"""

from __future__ import annotations

import codecs


class Body:
    """The growing text of one message."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []

    def feed(self, data: bytes) -> str:
        """Add bytes; return the newly complete text (possibly empty)."""
        text = self._decoder.decode(data)
        if text:
            self._parts.append(text)
        return text

    def close(self) -> str:
        """Flush: an incomplete trailing character becomes U+FFFD. Returns that tail."""
        text = self._decoder.decode(b"", final=True)
        if text:
            self._parts.append(text)
        return text

    @property
    def text(self) -> str:
        """The text decoded so far."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""
