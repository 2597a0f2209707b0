"""Harmony markup that arrives as text, read by the same token parser as a local model's ids.

Some servers pass gpt-oss output through unparsed (`<|channel|>analysis<|message|>…<|end|>
<|start|>assistant<|channel|>final<|message|>…`). `HarmonyText` tokenizes that text with
o200k_harmony, special tokens enabled (this text is the model's own output, never user or tool
text), and feeds the ids to a `StreamParser`: local and remote outputs are parsed by exactly the
same code, with the same recoveries, diagnostics and late lane decisions.

Guarantees: `feed` takes text in any chunking; a special token split across chunks is held
back until it is whole (the longest tail that could begin one; a whole marker is not held), so
the events never depend on where a server cut its chunks; the reading ends at the first
`<|return|>` or `<|call|>`, where a local generation stops (what a server sends after it is
ignored); `finish(complete=True)` is a stream that ended normally (such servers drop the last
`<|return|>` or `<|call|>`, which is supplied for the open message, or for text that never got
a header); `finish(complete=False)` leaves it cut (E-STREAM-TRUNCATED).
"""

from __future__ import annotations

from collections.abc import Collection

from app.domain.events import MessageDone, MessageStarted, ParseEvent
from app.domain.messages import Role
from app.domain.visibility import Lane
from app.harmony import encoding as enc
from app.harmony.parser import StreamParser
from app.harmony.stream import ParserState


class HarmonyText:
    """An incremental reader of Harmony markup given as text (see the module guarantees)."""

    def __init__(
        self, encoding: enc.HarmonyEncoding | None = None, known_tools: Collection[str] = ()
    ) -> None:
        self.encoding = encoding or enc.load_encoding()
        self.parser = StreamParser(self.encoding, role=Role.ASSISTANT, known_tools=known_tools)
        self._markers = tuple(self.encoding.special_text.values())
        self._longest = max(len(m) for m in self._markers)
        self._held = ""
        self._open_lane: Lane | None = None
        self._stopped = False

    def feed(self, text: str) -> list[ParseEvent]:
        """The parser's events for `text` (all but a tail that may begin a special token)."""
        text = self._held + text
        keep = self._partial_marker(text)
        ready, self._held = text[: len(text) - keep], text[len(text) - keep :]
        return self._parse(ready)

    def finish(self, complete: bool = False) -> list[ParseEvent]:
        """Close the stream; `complete` when it ended normally (its stop token was dropped)."""
        events = self._parse(self._held)
        self._held = ""
        unsettled = self.parser.state in (ParserState.HEADER, ParserState.CONTENT)
        if complete and unsettled and not self._stopped:
            stop = enc.CALL if self._open_lane is Lane.TOOL_CALL else enc.RETURN
            events += self._track(self.parser.feed_many([stop]))
        return events + self._track(self.parser.finish("" if complete else "cut"))

    def _parse(self, text: str) -> list[ParseEvent]:
        if not text or self._stopped:
            return []
        ids = self.encoding.encode_with_specials(text)
        cut = next((i + 1 for i, t in enumerate(ids) if t in (enc.RETURN, enc.CALL)), None)
        if cut is not None:  # a local generation stops here: so does this reading
            ids, self._stopped = ids[:cut], True
        return self._track(self.parser.feed_many(ids))

    def _track(self, events: list[ParseEvent]) -> list[ParseEvent]:
        for event in events:
            if isinstance(event, MessageStarted):
                self._open_lane = event.lane
            elif isinstance(event, MessageDone):
                self._open_lane = None
        return events

    def _partial_marker(self, text: str) -> int:
        """How many characters at the end of `text` could be the start of a special token."""
        for size in range(min(len(text), self._longest - 1), 0, -1):
            tail = text[-size:]
            if any(m.startswith(tail) and len(m) > size for m in self._markers):
                return size  # a whole marker is not held: the message closes at once
        return 0


__all__ = ["HarmonyText"]
