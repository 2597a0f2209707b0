"""Continuous batching, carried out: each step's plans (`plan.py`) run against llama.cpp, and
what came of them fed back to the generations.

Guarantees:
- Every decision is `plan.py`'s, made from views of the state between two steps and carried
  out here in order (admission, prelude, batch); only what llama.cpp says (a grammar refused,
  an image that failed, a step's status, the tokens sampled) changes what follows. A request
  waits in the queue until a sequence of its own is idle; one cancelled there ends untouched.
- Every step is one `llama_decode` of one batch holding, for each generation, its next token
  (and, with speculative decoding, the drafts to check) or a chunk of its prompt, so a new
  prompt never freezes the answers under way; a generation joins or leaves between two steps.
- Each generation samples only from its own logits rows with its own sampler chain, so a
  sequence decoded beside others gives the tokens it gives alone (tests).
- Speculative decoding never decides a token: the drafts are checked in the same step, the
  sampler samples at each position in turn and the drafts after the first mismatch are
  dropped from the cache; how much to draft is the plan's choice (`speculate.draft_length`),
  from what this generation's drafts were accepted and what steps cost.
- A cancel is seen between steps, and during a step that evaluates a prompt chunk between
  llama.cpp's graph nodes (the step is then undone and the others go on at the next one).
- After each prompt chunk but the last, how far its prompt is read goes out (`PromptProgress`),
  and a sliding-window model's sequence keeps a context checkpoint when one is due
  (`checkpoints.py`; a generation with something to keep only).
- At its end a generation's last tokens and its `Finished` go out, its cache's state is kept
  for its conversation (snapshots), and its sequence is free for the next in the queue.
- A prompt with images (`vision.py`) is expanded when it comes, so its length is the one the
  context holds; each image is evaluated on its own when its place in the prompt is reached
  (a prompt chunk stops before it), between two steps; a model without a projector refuses
  images, and an image the projector cannot take ends only its own generation, with why;
  before an image is evaluated, which of the prompt's images it is goes out (`PromptProgress`).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from typing import Any

from app.domain.events import FinishReason, GenerationDone, Timings
from app.engine.protocol import Finished, FromWorker, GenerateRequest, Refused, Started
from app.engine.worker import plan
from app.engine.worker.draft_model import DraftModel
from app.engine.worker.drafting import Drafter
from app.engine.worker.plan import Active, Admission, Batch, Chunk, Draft, Row, Waiting, Withdrawn
from app.engine.worker.running import Running, sampler_chain, scored
from app.engine.worker.sequences import Pool
from app.engine.worker.sequences import Sequence as Seq
from app.engine.worker.speculate import Lookup
from app.engine.worker.vision import Images, VisionError, is_image
from app.errors import ErrorCode


class Scheduler:
    """The generations of one loaded model."""

    def __init__(
        self,
        llm: Any,
        low: Any,
        pool: Pool,
        send: Callable[[FromWorker], None],
        cancelled: Callable[[int], bool],
        masks: Callable[[GenerateRequest], tuple[Any, str]],
        n_batch: int,
        speculative: str = "off",
        draft: DraftModel | None = None,
    ) -> None:
        self.llm, self.low, self.pool = llm, low, pool
        self.ctx = llm._ctx.ctx
        self._send, self._cancelled, self._masks = send, cancelled, masks
        self.n_batch = n_batch
        self.chunk = n_batch  # one sequence's prompt tokens in one step at most
        self.n_ctx = int(low.llama_n_ctx_seq(self.ctx))
        self.n_vocab = int(llm.n_vocab())
        self.queue: collections.deque[GenerateRequest] = collections.deque()
        self.active: list[Running] = []
        self.drafter = Drafter(speculative, draft, self.n_ctx)
        self._batch = low.llama_batch_init(n_batch, 0, 1)
        self._abort = low.ggml_abort_callback(lambda _data: self._abort_now())
        self._no_abort = low.ggml_abort_callback()
        self._stepping: list[Running] = []
        self._ended: list[int] = []
        self.images = Images()  # the projector's (`vision.py`), and each request's images

    def _reply(self, message: FromWorker) -> None:
        """Send a generation's last reply (its request is over)."""
        self._send(message)
        self._ended.append(message.request)

    def ended(self) -> list[int]:
        """The requests that ended since the last call."""
        ended, self._ended = self._ended, []
        return ended

    def close(self) -> None:
        self.images.close()
        self.low.llama_batch_free(self._batch)
        self.drafter.close()

    @property
    def busy(self) -> bool:
        return bool(self.active or self.queue)

    # --- the views the plans read -----------------------------------------------------

    def _views(self) -> list[Active]:
        """The generations under way, in the order they were admitted."""
        return [run.view(self._cancelled(run.req.request)) for run in self.active]

    def _by_seq(self) -> dict[int, Running]:
        return {run.seq.id: run for run in self.active}

    # --- admission ------------------------------------------------------------------

    def submit(self, req: GenerateRequest) -> None:
        if req.images:
            expanded = self.images.expand(req)
            if isinstance(expanded, str):
                self._reply(Refused(req.request, ErrorCode.INPUT_INVALID, expanded))
                return
            req = expanded
        refused = plan.context_refusal(len(req.prompt_ids), self.n_ctx)
        if refused:
            self.images.forget(req.request)
            self._reply(Refused(req.request, ErrorCode.CONTEXT, refused))
            return
        self.queue.append(req)

    def _admit(self) -> None:
        """Carry out the admission plan; when a grammar is refused (its sequence stays idle)
        the requests after it are decided again."""
        pending = list(self.queue)
        while pending:
            waiting = [
                Waiting(r.request, r.prompt_ids, r.reserved, self._cancelled(r.request))
                for r in pending
            ]
            split = self.pool.reserved > 0
            admission = plan.admit(waiting, self.pool.seats(), self._views(), split)
            pending = self._carry_out(admission, pending)

    def _carry_out(
        self, admission: Admission, pending: list[GenerateRequest]
    ) -> list[GenerateRequest]:
        """Carry out `admission` over `pending`; those still to decide (after a refusal)."""
        at = {req.request: i for i, req in enumerate(pending)}
        for decision in admission.decisions:
            req = pending[at[decision.request]]
            if isinstance(decision, Withdrawn):
                self._withdraw(req)
            elif not self._start(req, self.pool.all[decision.seq]):
                return pending[at[decision.request] + 1 :]
        return []

    def _withdraw(self, req: GenerateRequest) -> None:
        """`req` was cancelled in the queue: it ends untouched."""
        self.queue.remove(req)
        self.images.forget(req.request)
        timings = Timings(prompt_tokens=len(req.prompt_ids))
        done = GenerationDone(FinishReason.CANCELLED, None, timings)
        self._reply(Finished(req.request, done))

    def _start(self, req: GenerateRequest, seq: Seq) -> bool:
        """Start `req` on `seq`; False when its grammar is refused (`seq` stays idle)."""
        self.queue.remove(req)
        mask, refused = self._masks(req)
        if refused:
            self.images.forget(req.request)
            self._reply(Refused(req.request, ErrorCode.GRAMMAR, refused))
            return False
        seq.busy = True
        self._send(Started(req.request))
        self.active.append(self._running(req, seq, mask))
        return True

    def _running(self, req: GenerateRequest, seq: Seq, mask: Any) -> Running:
        """`req`'s generation on `seq`, its cache holding what it can of the prompt."""
        prompt = list(req.prompt_ids)
        start = time.perf_counter()
        reused, restored = self.pool.prepare(seq, prompt, req.keep)
        last_n = int(self.llm.last_n_tokens_size)
        sampler = sampler_chain(self.n_vocab, last_n, req.sampling, mask)
        run = Running(req, seq, prompt, prompt[len(seq.tokens) :], sampler, mask, start)
        run.reused, run.restored, run.restored_from = reused, restored.count, restored.source
        expanded = self.images.of(req.request)
        if expanded is not None:
            run.images, run.image_tokens = expanded.images, tuple(expanded.counts)
        if self.drafter.speculative == "lookup":
            run.lookup = Lookup([t for t in prompt if not is_image(t)])
        return run

    # --- one step -------------------------------------------------------------------

    def step(self) -> None:
        """Admit what can start, settle what comes before the batch, decode one batch,
        sample, send, end what ended."""
        self._admit()
        self._prelude()
        if not self.active:
            return
        decoding = sorted((r for r in self.active if r.next is not None), key=lambda r: r.seq.id)
        drafts = self.drafter.drafts(decoding, self.n_batch)
        batch = plan.batch(self._views(), drafts, self.n_batch, self.chunk)
        if batch.parts:
            self._run(batch)

    def _prelude(self) -> None:
        """End the cancelled generations; evaluate the images prompts have reached."""
        if not self.active:
            return
        before = plan.prelude(self._views())
        runs = self._by_seq()
        for seq in before.cancelled:
            runs[seq].reason = FinishReason.CANCELLED
            self._end(runs[seq])
        for seq in before.images:
            run = runs[seq]
            while run in self.active and run.todo and is_image(run.todo[0]):
                self._image(run)

    def _image(self, run: Running) -> None:
        """Evaluate the image `run`'s prompt has reached; its generation ends on a failure.
        A cache that stopped inside an image (never kept so) is cleared and read again."""
        vision = self.images.vision
        assert vision is not None
        at = len(run.seq.tokens)
        piece = run.images.get(at)
        if piece is None:
            self.pool.clear(run.seq)
            run.todo = list(run.prompt)
            run.reused = run.restored = 0
            return
        n = piece.n_pos
        if piece.first:  # said before the projector's work, once an image
            run.read(self._send, image=piece.image + 1)
        try:
            after = vision.evaluate(self.ctx, piece, at, run.seq.id, self.n_batch)
            if after != at + n:
                raise VisionError(f"the image took {after - at} positions, not {n}")
        except VisionError as exc:
            self.pool.clear(run.seq)
            self.active.remove(run)
            self.pool.release(run.seq)
            self.images.forget(run.req.request)
            self._reply(Refused(run.req.request, ErrorCode.INPUT_INVALID, exc.message))
            return
        run.seq.tokens.extend(run.todo[:n])
        del run.todo[:n]

    # --- the batch ------------------------------------------------------------------

    def _run(self, batch: Batch) -> None:
        """Decode `batch`; undone when a cancel stopped it, its generations ended when
        llama.cpp failed, else sampled and fed back."""
        runs = self._by_seq()
        self._stepping = [runs[seq] for seq in batch.stepping]
        started = time.perf_counter()
        status = self._decode(batch.rows, batch.prompting)
        if status == 2:  # a cancel came while a prompt chunk was evaluated: undo, go on
            for run in self._stepping:
                self.pool.cut(run.seq, len(run.seq.tokens))
            return
        if status != 0:
            self._failed(status)
            return
        if not batch.prompting:
            self.drafter.costs.record(len(batch.rows), (time.perf_counter() - started) * 1000)
        self._take(batch, runs)

    def _decode(self, rows: Sequence[Row], prompting: bool) -> int:
        batch, low = self._batch, self.low
        for i, row in enumerate(rows):
            batch.token[i], batch.pos[i] = row.token, row.pos
            batch.n_seq_id[i], batch.seq_id[i][0], batch.logits[i] = 1, row.seq, row.logits
        batch.n_tokens = len(rows)
        if prompting:
            low.llama_set_abort_callback(self.ctx, self._abort, None)
        try:
            return int(low.llama_decode(self.ctx, batch))
        finally:
            if prompting:
                low.llama_set_abort_callback(self.ctx, self._no_abort, None)

    def _abort_now(self) -> bool:
        return any(self._cancelled(run.req.request) for run in self._stepping)

    def _take(self, batch: Batch, runs: dict[int, Running]) -> None:
        """Each chunk into its cache; each generation with rows sampled, its drafts checked."""
        sampled = batch.sampled()
        for part in batch.parts:
            run = runs[part.seq]
            if isinstance(part, Chunk):
                run.seq.tokens.extend(part.tokens)
                del run.todo[: len(part.tokens)]
                if part.ends:
                    self._sample(run, sampled[part.seq], Draft())
                    self._checkpoint(run)  # (after the first token went out: not in its way)
                else:
                    run.read(self._send)  # how far its prompt is read
                    if run.req.keep is not None:
                        self.pool.checkpoint(run.seq, len(run.todo), self.chunk)
            else:
                run.seq.tokens.append(part.token)
                self._sample(run, sampled[part.seq], part.draft)

    def _checkpoint(self, run: Running) -> None:
        """A sliding-window model's state once its prompt is read: a later prompt that leaves
        the answer out (a regenerate, Harmony's dropped analysis) restores it."""
        snapshots = self.pool.snapshots
        if run.req.keep is None or snapshots is None or not snapshots.checkpoints:
            return
        if run in self.active and len(run.seq.tokens) == len(run.prompt):
            snapshots.keep(run.req.keep, run.seq)

    def _sample(self, run: Running, rows: list[int], draft: Draft) -> None:
        """Sample `run` from its `rows`, keep the drafts matched, send, end it if it ended."""
        held = len(run.seq.tokens)
        kept = self._verify(run, rows, draft.tokens)
        if draft.tokens:
            run.drafted += len(draft.tokens)
            run.accepted += kept
            run.acceptance.record(draft.kind, len(draft.tokens), kept)
            run.seq.tokens.extend(draft.tokens[:kept])
            self.pool.cut(run.seq, held + kept)
        run.flush(self._send)
        if run.reason is not None:
            self._end(run)

    def _verify(self, run: Running, rows: list[int], drafts: Sequence[int]) -> int:
        """Sample at each row in turn while the drafts are matched; how many were kept."""
        cancelled = self._cancelled(run.req.request)
        for j, row in enumerate(rows):
            token = int(run.sampler.sample(self.llm._ctx, row))
            top = scored(self.low, self.ctx, row, self.n_vocab, token, run.req.top_logprobs)
            full = len(run.seq.tokens) + j >= self.n_ctx - 1
            if not run.emit(token, top, full, cancelled) or j == len(drafts):
                return j
            if token != drafts[j]:
                return j
        return len(rows) - 1

    # --- ends -----------------------------------------------------------------------

    def _end(self, run: Running) -> None:
        run.flush(self._send, force=True)
        self._reply(run.finished())
        self.active.remove(run)
        self.images.forget(run.req.request)
        if run.mask is not None:
            run.mask.discard()
        if run.req.keep is not None and self.pool.snapshots is not None:
            self.pool.snapshots.keep(run.req.keep, run.seq)
        self.pool.release(run.seq)

    def _failed(self, status: int) -> None:
        """llama.cpp could not decode the step: its generations end, their caches cleared."""
        for run in list(self._stepping):
            self.pool.clear(run.seq)
            if run.generated == 0:
                said = f"llama.cpp could not evaluate the prompt (status {status})"
                self._reply(Refused(run.req.request, ErrorCode.CONTEXT, said))
                self.active.remove(run)
                self.pool.release(run.seq)
                self.images.forget(run.req.request)
            else:
                run.reason = FinishReason.CONTEXT
                self._end(run)
