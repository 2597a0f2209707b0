"""A reply's debug record as the turn runs: what only the debug pane reads.

Guarantees: nothing here touches `reply.segments`; the prompt, the generated ids, the token
scores, the timings (speculative decoding's drafted and accepted tokens only where it drafted;
the prompt's images and the tokens they became only where it had images, each image's count
said in the event list),
the parser's issues and the remote endpoint's request and response land in
`reply.debug`; the timeline (`spans`, `token_times`) is in ms from the turn's start, and a
continued reply's timeline goes on where its last one ended.
"""

from __future__ import annotations

import json
from typing import Any

from app.domain.events import (
    GenerationDone,
    MessageDone,
    ParseIssue,
    RequestSent,
    ResponseReceived,
    TokenScored,
)
from app.domain.history import Reply


class DebugLog:
    """Writes one reply's debug record (see the module guarantees)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        # ms of the turn before the current generation (the timeline; a continued reply goes on)
        self._clock = max((end for _, _, end in reply.debug.spans), default=0.0)

    def line(self, text: str) -> None:
        """One line of the debug pane's event list."""
        self.reply.debug.events.append(text)

    def issue(self, event: ParseIssue) -> None:
        self.line(f"{event.code.value} ({event.severity.value}): {event.message}")

    def prompt(self, ids: tuple[int, ...]) -> None:
        """A generation starts from the prompt `ids` (for the debug pane and Continue)."""
        debug = self.reply.debug
        debug.prompt_ids = ids
        debug.generation_start, debug.generation_messages = len(debug.token_ids), 0

    def message(self, event: MessageDone) -> None:
        """A message of the generation closed: its exact ids are kept."""
        debug = self.reply.debug
        debug.token_ids.extend(event.token_ids)
        debug.generation_messages += 1

    def scored(self, event: TokenScored) -> None:
        debug = self.reply.debug
        debug.token_scores.append((event.token, event.logprob, event.top))
        debug.token_times.append(round(self._clock + event.t_ms, 2))

    def generated(self, event: GenerationDone) -> None:
        """A generation ended: its prompt and decode spans, why it stopped, its timings."""
        t, debug = event.timings, self.reply.debug
        start, first, end = self._clock, self._clock + t.first_token_ms, self._clock + t.total_ms
        debug.spans += [
            ("prompt", round(start, 2), round(first, 2)),
            ("decode", round(first, 2), round(end, 2)),
        ]
        self._clock = end
        debug.stop_reason = event.reason.value
        debug.timings = {
            "prompt_tokens": t.prompt_tokens,
            "prompt_evaluated": t.prompt_evaluated,
            "prompt_reused": t.prompt_reused,
            "restored_disk": t.prompt_restored if t.restored_from == "disk" else 0,
            "restored_memory": t.prompt_restored if t.restored_from == "memory" else 0,
            "first_token_ms": round(t.first_token_ms, 1),
            "total_ms": round(t.total_ms, 1),
            "generated": t.generated,
            "tokens_per_s": round(t.decode_tokens_per_s, 1),
        }
        if t.drafted:  # speculative decoding drafted: what it proposed and what was kept
            debug.timings |= {"drafted": t.drafted, "accepted": t.accepted}
        if t.image_tokens:  # the prompt's images: how many, and the tokens they became
            debug.timings |= {"images": len(t.image_tokens), "image_tokens": sum(t.image_tokens)}
            each = " + ".join(str(n) for n in t.image_tokens)
            self.line(f"images: {len(t.image_tokens)} → {each} tokens")

    def tools_ran(self, durations: list[tuple[str, float]]) -> None:
        """The calls (tool name, ms) ran side by side from now; the turn goes on when the last
        one ended."""
        for name, duration in durations:
            self.reply.debug.spans.append(
                (f"tool {name}", round(self._clock, 2), round(self._clock + duration, 2))
            )
        self._clock += max((d for _, d in durations), default=0.0)

    def sent(self, event: RequestSent) -> None:
        self.line(f"request to {event.endpoint}: {json.dumps(event.body)}")

    def received(self, event: ResponseReceived) -> None:
        """What a remote endpoint answered: its tokens' scores and what it said about them."""
        tops = event.top or ((),) * len(event.logprobs)
        self.reply.debug.text_scores += [
            (token, lp, top) for (token, lp), top in zip(event.logprobs, tops, strict=True)
        ]
        self.line(f"response from {event.endpoint}: {json.dumps(_said(event))}")


def _said(event: ResponseReceived) -> dict[str, Any]:
    """What a remote endpoint said about its answer, for the debug record."""
    said: dict[str, Any] = {"id": event.response_id, "finish_reason": event.finish_reason}
    said |= {"usage": event.usage} if event.usage else {"usage": "not reported"}
    if event.logprobs:
        said["logprobs"] = [[t, round(lp, 4)] for t, lp in event.logprobs]
    return said


__all__ = ["DebugLog"]
