"""Always finished within the budget: the token ids that end a JSON-mode answer in time.

Guarantees: a `Closer` reads the constraint's closing plan (which bodies are JSON under which
schema; for Harmony, the ids of the frame that leaves reasoning for the answer) and, for the
tokens generated so far, proposes the shortest ending — the open JSON value closed as
`close` finishes it (then the same with another key where a key is to be written, for a
grammar that orders its keys), then the stop id (`<|return|>` after an answer, `<|call|>` after a
call, the end-of-sequence id otherwise), or, while the model is still reasoning, the frame into
the answer, its smallest value and `<|return|>`. It proposes nothing inside a message header
or for a body it cannot finish. The caller forces a proposal only once it has checked every id
against the grammar. Bounded on any schema: setting up reads each subschema's smallest value
within one shared `Budget` (past it, the margin is the largest), every proposal is built within
its own (`close.py`), and `stop` (the request cancelled) makes either give up at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from app.constrain.close import closings
from app.constrain.limits import CHARS_PER_TOKEN
from app.constrain.minimal import Budget, smallest
from app.constrain.walk import subschemas

Tokenize = Callable[[str], list[int]]
Piece = Callable[[int], bytes]
MAX_MARGIN = 64  # tokens


def plan_text(
    answer: Any,
    *,
    harmony: bool,
    tools: dict[str, Any] | None = None,
    answer_allowed: bool = True,
    think: bool = False,
    frame: dict[str, Any] | None = None,
) -> str:
    """The closing plan as the worker reads it (a JSON text: it crosses the pipe as is).
    `answer` is the answer's generation schema, or None for a free-text answer."""
    return json.dumps(
        {
            "harmony": harmony,
            "answer": answer,
            "tools": tools or {},
            "answer_allowed": answer_allowed,
            "think": think,
            "frame": frame or {},
        }
    )


class Closer:
    """See the module guarantees."""

    def __init__(
        self,
        plan: str,
        tokenize: Tokenize,
        piece: Piece,
        eos: int,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        data = json.loads(plan)
        self.harmony: bool = data["harmony"]
        self.answer: Any = data["answer"]
        self.tools: dict[str, Any] = data["tools"]
        self.answer_allowed: bool = data["answer_allowed"]
        self.think: bool = data["think"]
        self.frame: dict[str, Any] = data["frame"]
        self.tokenize, self.piece, self.eos, self.stop = tokenize, piece, eos, stop
        bodies = (self.answer, *self.tools.values())
        # what one token can add to the ending at most (opening a value whose smallest form is
        # the longest): the ending is forced this many tokens early, so that no single choice
        # outgrows the budget
        self.margin = self._margin([p for s in bodies for p in subschemas(s)])
        whole = max((len(smallest(s, Budget(stop=stop)) or "") for s in bodies), default=0)
        # proposals are looked for once the tokens left come within reach of any ending (a
        # character is at most a token)
        self.window = 2 * self.margin + 48 + whole

    def _margin(self, parts: list[Any]) -> int:
        budget, longest = Budget(stop=self.stop), ""
        for part in parts:
            longest = max(longest, smallest(part, budget) or "", key=len)
            if budget.chars <= 0 or budget.steps <= 0:
                return MAX_MARGIN  # too much to read: the largest margin
        return min(MAX_MARGIN, 4 + len(self.tokenize(longest[: MAX_MARGIN * CHARS_PER_TOKEN])))

    def _text(self, tokens: Sequence[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", "replace")

    def _endings(self, body: str, schema: Any, stop: int) -> list[list[int]]:
        if schema is None:  # free text: the stop id alone ends it
            return [[stop]]
        found = closings(body, schema, stop=self.stop)
        return [[*self.tokenize(rest), stop] for rest in found]

    def endings(self, tokens: Sequence[int]) -> list[list[int]]:
        """The id sequences that may end the answer from here, shortest way first; [] when
        none is proposed (see the module guarantees)."""
        if not self.harmony:
            text = self._text(tokens)
            if self.think and text.startswith("<think>"):
                if "</think>" not in text:
                    value = smallest(self.answer, Budget(stop=self.stop))
                    return [] if value is None else [[*self.tokenize("</think>" + value), self.eos]]
                text = text.split("</think>", 1)[1].lstrip()
            return self._endings(text, self.answer, self.eos)
        ending = self._harmony(tokens)
        return ending if ending is not None else []

    def _harmony(self, tokens: Sequence[int]) -> list[list[int]] | None:
        f = self.frame
        marks = [i for i, t in enumerate(tokens) if t in (f["channel"], f["message"])]
        if not marks or tokens[marks[-1]] != f["message"]:
            return None  # in a header (or before one): it ends in a few tokens anyway
        message = marks[-1]
        channel = max((i for i in marks if tokens[i] == f["channel"]), default=-1)
        header = self._text(tokens[channel + 1 : message])
        body = self._text(tokens[message + 1 :])
        if header.startswith("final"):
            return self._endings(body, self.answer, f["return"])
        if " to=" in header:
            recipient = header.split(" to=", 1)[1].split()[0].split("<|")[0]
            if recipient not in self.tools:
                return None  # code, or a tool whose body is not JSON
            return self._endings(body, self.tools[recipient], f["call"])
        if not self.answer_allowed:
            return None
        value = "" if self.answer is None else smallest(self.answer, Budget(stop=self.stop))
        if value is None:
            return None
        leave = [f["end"], f["start"], *f["assistant"], f["channel"], *f["final"], f["message"]]
        return [[*leave, *self.tokenize(value), f["return"]]]


__all__ = ["Closer", "plan_text"]
