"""Speculative decoding's drafts for the generations of one step: which tokens each checks
after its next one, and how many (`plan.lookup_length` / `plan.model_length` decide; the
lookup or the draft model proposes).

Guarantees: a draft never decides a token (the scheduler's sampler checks each); each
decoding generation's drafts fit in the room the ones before it left in the batch and in its
context (`plan.draft_limit`); a generation with images gets no draft model's drafts (an image
is no token); `always_draft` drafts every proposal whatever it costs (exactness tests).
"""

from __future__ import annotations

from app.engine.worker import plan
from app.engine.worker.draft_model import DraftModel
from app.engine.worker.plan import Draft
from app.engine.worker.running import Running
from app.engine.worker.speculate import Lookup, StepCosts


class Drafter:
    """The drafts of one loaded model's generations."""

    def __init__(self, speculative: str, draft: DraftModel | None, n_ctx: int) -> None:
        self.speculative = speculative if speculative in ("lookup", "draft") else "off"
        self.draft = draft
        self.n_ctx = n_ctx
        self.costs = StepCosts()  # what steps cost, by their width (recorded by the scheduler)
        self.always_draft = False

    def close(self) -> None:
        if self.draft is not None:
            self.draft.close()

    def drafts(self, decoding: list[Running], n_batch: int) -> dict[int, Draft]:
        """The drafts each decoding generation checks (by sequence, in their order), each
        within the room the ones before it left."""
        drafts: dict[int, Draft] = {}
        width = len(decoding)
        for run in decoding:
            draft = self._draft(run, width, n_batch - width - 1)
            if draft.tokens:
                drafts[run.seq.id] = draft
                width += len(draft.tokens)
        return drafts

    def _draft(self, run: Running, batch: int, room: int) -> Draft:
        """The drafts to check for `run` in a step of `batch` tokens; none when not worth it."""
        limit = plan.draft_limit(room, self.n_ctx, len(run.seq.tokens))
        if limit <= 0:
            return Draft()
        if self.speculative == "lookup" and run.lookup is not None:
            return self._looked_up(run, run.lookup, batch, limit)
        if self.speculative == "draft" and self.draft is not None and not run.images:
            return self._drafted(run, self.draft, batch, limit)  # (an image is no token)
        return Draft()

    def _looked_up(self, run: Running, lookup: Lookup, batch: int, limit: int) -> Draft:
        kind, proposal = lookup.propose(limit)
        if not proposal:
            return Draft()
        rate = run.acceptance.rate(kind)
        always = self.always_draft
        length = plan.lookup_length(len(proposal), rate, batch, self.costs, always=always)
        if length == 0:
            run.acceptance.shadow(kind, len(lookup.tokens), proposal)
            return Draft()
        return Draft(kind, tuple(proposal[:length]))

    def _drafted(self, run: Running, model: DraftModel, batch: int, limit: int) -> Draft:
        run.steps += 1
        rate, ms, always = run.acceptance.rate(0), model.ms_per_token, self.always_draft
        length = plan.model_length(
            limit, rate, batch, self.costs, draft_ms=ms, steps=run.steps, always=always
        )
        history = [*run.seq.tokens, run.next if run.next is not None else 0]
        return Draft(0, tuple(model.propose(run.seq.id, history, length)))
