"""Generations on the model worker, from the app's side: a request out, its tokens streamed
back, its end (`WorkerClient.generate`).

Guarantees: `generate` yields `TokenStep`s (and, before the first, `PromptRead` while a long
prompt is read and `ImageEncoding` as its projector reaches each image) and
ends with one `GenerationDone` or one `TurnFailed`; cancelling (the `cancel` event) sends a
`Cancel` for that request; a generation past its deadline is cancelled and ends as a
`TurnFailed` that says so, and a worker that has not ended it `GRACE_S` later is stopped; a
caller that stops reading cancels it; a worker that dies is `TurnFailed` (`E-WORKER`) with the
partial ids. The window's and the server's generations are counted apart (`_use`).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator, Sequence

from app.constrain.constraint import Constraint
from app.domain.events import GenerationEvent, TurnFailed
from app.domain.images import ImagePixels
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.sampling import Sampling
from app.engine.local.limits import GRACE_S, deadline_for
from app.engine.local.router import Router
from app.engine.protocol import (
    Finished,
    GenerateRequest,
    Keep,
    PromptProgress,
    Refused,
    RequestState,
    Started,
    TokenBatch,
)
from app.errors import ErrorCode, WorkerError


class Generations:
    """The generations of `WorkerClient` (which gives the process, its router and cancels)."""

    _router: Router | None
    _use: collections.Counter[str]

    def _ensure_ready(self) -> Router:
        raise NotImplementedError

    def _died(self) -> None:
        raise NotImplementedError

    def _stop_stalled(self, router: Router) -> None:
        raise NotImplementedError

    @staticmethod
    def _cancel(router: Router, request: int) -> None:
        raise NotImplementedError

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        stop_ids: Sequence[int],
        sampling: Sampling | None = None,
        max_tokens: int = 512,
        constraint: Constraint | None = None,
        cancel: threading.Event | None = None,
        top_logprobs: int = 0,
        deadline_s: float | None = None,
        keep: Keep | None = None,
        reserved: bool = False,
        images: Sequence[ImagePixels] = (),
    ) -> Iterator[GenerationEvent]:
        """Stream the generation for `prompt_ids`; see the module guarantees. A `Constraint`
        makes every token follow its grammar (JSON mode); `deadline_s` overrides the default
        time budget (`deadline_for`, counted from when the worker starts it: a generation
        queued behind others waits without its clock running); `keep` names the conversation
        whose KV snapshots are looked for first and kept after
        (`app/engine/worker/kv_snapshots.py`); `reserved` runs it on the window's own
        sequence, never queued behind the server's clients; `images` are the prompt's, one for
        each `IMAGE_ID` in it."""
        router = self._ensure_ready()
        limit = deadline_s if deadline_s is not None else deadline_for(len(prompt_ids), max_tokens)
        request = router.new_id()
        message = GenerateRequest(
            request,
            tuple(prompt_ids),
            tuple(stop_ids),
            sampling or Sampling(),
            max_tokens,
            top_logprobs=top_logprobs,
            keep=keep,
            reserved=reserved,
            images=tuple(images),
        ).constrained(constraint)
        partial: list[int] = []
        self._use["window" if reserved else "clients"] += 1
        try:
            router.send(message)
            yield from self._replies(router, request, limit, cancel, partial)
        except WorkerError as exc:
            self._died()
            yield TurnFailed(exc.message, ErrorCode.WORKER, tuple(partial))
        except GeneratorExit:
            self._abandon(router, request)
            raise
        finally:
            self._use["window" if reserved else "clients"] -= 1

    def _replies(
        self,
        router: Router,
        request: int,
        limit: float,
        cancel: threading.Event | None,
        partial: list[int],
    ) -> Iterator[GenerationEvent]:
        """The generation's tokens as they come (each also kept in `partial`), then how it
        ended; overrun when `limit` seconds pass from its start (from `Started`, when it
        waited its turn) without its end."""
        ends = time.monotonic() + limit
        while True:
            msg = router.next(request, timeout=0.02)
            if cancel is not None and cancel.is_set():
                self._cancel(router, request)
            if isinstance(msg, Started):
                ends = time.monotonic() + limit
                continue
            if isinstance(msg, TokenBatch):
                for step in msg.steps:
                    partial.append(step.token)
                    yield step
            elif isinstance(msg, PromptProgress):
                image = msg.image
                yield ImageEncoding(*image) if image else PromptRead(msg.done, msg.total)
            if msg is None or isinstance(msg, TokenBatch | PromptProgress):
                if time.monotonic() > ends:
                    yield self._overran(router, request, limit, partial)
                    return
                continue
            if isinstance(msg, Refused):
                yield TurnFailed(msg.message, msg.code, tuple(partial))
                return
            assert isinstance(msg, Finished)
            yield msg.done
            return

    def _abandon(self, router: Router, request: int) -> bool:
        """The caller stopped reading mid-generation: cancel it and drain its replies; whether
        the worker ended it within `GRACE_S` (else it may still be busy with it)."""
        if request not in router.states or self._router is not router:
            return True
        try:
            self._cancel(router, request)
            deadline = time.monotonic() + GRACE_S
            while request in router.states and time.monotonic() < deadline:
                router.next(request, timeout=0.1)
            ended = request not in router.states
            router.finish(request, RequestState.FAILED)
        except WorkerError:
            self._died()
            return True
        return ended

    def _overran(
        self, router: Router, request: int, limit: float, partial: list[int]
    ) -> TurnFailed:
        """Stop a generation past its deadline: cancelled, or the worker stopped when it does
        not end it in time (the next request starts a new one)."""
        reason = f"the generation ran past its deadline of {limit:g} s and was stopped"
        if not self._abandon(router, request):
            self._stop_stalled(router)
            reason += "; the model worker did not stop in time and was restarted"
        return TurnFailed(reason, ErrorCode.WORKER, tuple(partial))
