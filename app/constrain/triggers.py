"""Where a lazy grammar starts: the trigger words and token ids that switch a constraint on
mid-answer (a tool call opening inside free text, as llama.cpp's `grammar_lazy` does).

Guarantees: the matcher is fed generated tokens one at a time with their bytes and reports the
first trigger to appear (the earliest in the text; a token trigger at its token), with the
token at which it completed and the byte offset where it began, so the constraint can take
over from there; a word split over several tokens, or over a multi-byte character, is found as
if it were whole; `held` says how many trailing bytes could still begin a word (text a parser
holds back rather than show as answer text); once fired it stays fired. Pure: no model, no
grammar engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Trigger:
    """A word in the generated text (`word`) or one token id (`token`)."""

    word: bytes = b""
    token: int | None = None

    def __post_init__(self) -> None:
        if bool(self.word) == (self.token is not None):
            raise ValueError("a trigger is a word or a token id, exactly one of them")


@dataclass(frozen=True)
class Fired:
    """A trigger appeared: which, at which fed token (0-based), from which byte of the text."""

    trigger: Trigger
    token_index: int
    offset: int


class TriggerWatch:
    """Watches one generation for its triggers (see the module guarantees)."""

    def __init__(self, triggers: Sequence[Trigger]) -> None:
        if not triggers:
            raise ValueError("a lazy grammar needs at least one trigger")
        self._words = [t for t in triggers if t.word]
        self._tokens = {t.token: t for t in triggers if t.token is not None}
        self._longest = max((len(t.word) for t in self._words), default=0)
        self._text = bytearray()
        self._fed = 0
        self.fired: Fired | None = None

    def feed(self, token: int, piece: bytes) -> Fired | None:
        """Read one generated token; the trigger that fired with it (or before it), else None."""
        if self.fired is not None:
            return self.fired
        index, start = self._fed, len(self._text)
        self._fed += 1
        if token in self._tokens:
            self.fired = Fired(self._tokens[token], index, start)
            return self.fired
        self._text += piece
        self.fired = self._word_in(index, start)
        return self.fired

    def _word_in(self, index: int, start: int) -> Fired | None:
        """The earliest word that ends in the bytes just read (looked for from where a word
        could have begun: `start` less the longest word)."""
        since = max(0, start - self._longest + 1)
        found = [(at, w) for w in self._words if (at := self._text.find(w.word, since)) >= 0]
        if not found:
            return None
        at, word = min(found, key=lambda f: f[0])
        return Fired(word, index, at)

    def held(self) -> int:
        """How many trailing bytes of the text read so far could still begin a trigger word."""
        if self.fired is not None:
            return 0
        text = bytes(self._text)
        best = 0
        for w in self._words:
            for n in range(min(len(w.word) - 1, len(text)), best, -1):
                if text.endswith(w.word[:n]):
                    best = n
                    break
        return best
