"""Continuous batching: the generations under way, decoded together one step at a time.

Guarantees:
- A generation gets an idle sequence when one it may use is free (`Pool.choose`: the window's
  turn its reserved one, the server's clients the rest, in the order they came) and waits in
  the queue until then; a queued generation that is cancelled ends at once, untouched.
- Every step is one `llama_decode` of one batch holding, for each generation, its next token
  (and, with speculative decoding, the drafts to check) or a chunk of its prompt: at most
  `SHARED_CHUNK` prompt tokens while others are decoding, so a new prompt never freezes the
  answers under way; a generation joins or leaves between two steps.
- Each generation samples only from its own logits rows with its own sampler chain, so a
  sequence decoded beside others gives the tokens it gives alone (tests).
- Speculative decoding never decides a token: the drafts are checked in the same step, the
  sampler samples at each position in turn and the drafts after the first mismatch are
  dropped from the cache; how much to draft is `speculate.draft_length`'s choice, from what
  this generation's drafts were accepted and what steps cost.
- A cancel is seen between steps, and during a step that evaluates a prompt chunk between
  llama.cpp's graph nodes (the step is then undone and the others go on at the next one).
- At its end a generation's last tokens and its `Finished` go out, its cache's state is kept
  for its conversation (snapshots), and its sequence is free for the next in the queue.
- A prompt with images (`vision.py`) is expanded when it comes, so its length is the one the
  context holds; each image is evaluated on its own when its place in the prompt is reached
  (a prompt chunk stops before it), between two steps; a model without a projector refuses
  images, and an image the projector cannot take ends only its own generation, with why.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

from app.domain.events import FinishReason, GenerationDone, Timings
from app.engine.protocol import Finished, FromWorker, GenerateRequest, Refused, Started
from app.engine.worker.draft_model import DraftModel
from app.engine.worker.kv_snapshots import common_prefix
from app.engine.worker.running import Running, sampler_chain, scored
from app.engine.worker.sequences import SHARE_MIN, Pool, Sequence
from app.engine.worker.speculate import (
    DRAFT_MAX,
    Lookup,
    StepCosts,
    draft_length,
)
from app.engine.worker.vision import Images, VisionError, is_image
from app.errors import ErrorCode

SHARED_CHUNK = 64  # prompt tokens per step while other generations decode
PROBE_EVERY = 32  # a draft model idle this many steps drafts a little, to learn again
_Entry = tuple[Running | None, int, int, int, bool]  # (run, token, seq, position, logits)


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
        self.speculative = speculative if speculative in ("lookup", "draft") else "off"
        self.draft = draft
        self.costs = StepCosts()
        self.always_draft = False  # every proposal drafted, whatever it costs (exactness tests)
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
        if self.draft is not None:
            self.draft.close()

    @property
    def busy(self) -> bool:
        return bool(self.active or self.queue)

    # --- admission ------------------------------------------------------------------

    def submit(self, req: GenerateRequest) -> None:
        if req.images:
            expanded = self.images.expand(req)
            if isinstance(expanded, str):
                self._reply(Refused(req.request, ErrorCode.INPUT_INVALID, expanded))
                return
            req = expanded
        if len(req.prompt_ids) >= self.n_ctx:
            self.images.forget(req.request)
            refused = f"the prompt has {len(req.prompt_ids)} tokens; the context holds {self.n_ctx}"
            self._reply(Refused(req.request, ErrorCode.CONTEXT, refused))
            return
        self.queue.append(req)

    def _admit(self) -> None:
        for req in list(self.queue):
            if self._cancelled(req.request):
                self.queue.remove(req)
                self.images.forget(req.request)
                timings = Timings(prompt_tokens=len(req.prompt_ids))
                done = GenerationDone(FinishReason.CANCELLED, None, timings)
                self._reply(Finished(req.request, done))
                continue
            seq = self.pool.choose(req.prompt_ids, req.reserved)
            if seq is None or self._follows(req, seq):
                continue
            self.queue.remove(req)
            mask, refused = self._masks(req)
            if refused:
                self.images.forget(req.request)
                self._reply(Refused(req.request, ErrorCode.GRAMMAR, refused))
                continue
            seq.busy = True
            self._send(Started(req.request))
            prompt = list(req.prompt_ids)
            start = time.perf_counter()
            reused, restored = self.pool.prepare(seq, prompt, req.keep)
            sampler = sampler_chain(
                self.n_vocab, int(self.llm.last_n_tokens_size), req.sampling, mask
            )
            run = Running(req, seq, prompt, prompt[len(seq.tokens) :], sampler, mask, start)
            run.reused, run.restored, run.restored_from = reused, restored.count, restored.source
            expanded = self.images.of(req.request)
            if expanded is not None:
                run.images, run.image_tokens = expanded.images, tuple(expanded.counts)
            if self.speculative == "lookup":
                run.lookup = Lookup([t for t in prompt if not is_image(t)])
            self.active.append(run)

    def _follows(self, req: GenerateRequest, seq: Sequence) -> bool:
        """Whether `req` should wait for a generation still evaluating the same prompt (the
        choices of one request): its cache is then copied, not evaluated twice."""
        own = common_prefix(seq.tokens, req.prompt_ids)
        return any(
            run.todo and common_prefix(run.prompt, req.prompt_ids) >= own + SHARE_MIN
            for run in self.active
        )

    # --- one step -------------------------------------------------------------------

    def step(self) -> None:
        """Admit what can start, decode one batch, sample, send, end what ended."""
        self._admit()
        for run in [r for r in self.active if self._cancelled(r.req.request)]:
            run.reason = FinishReason.CANCELLED
            self._end(run)
        if not self.active:
            return
        for run in [r for r in self.active if r.todo and is_image(r.todo[0])]:
            while run in self.active and run.todo and is_image(run.todo[0]):
                self._image(run)
        if not self.active:
            return
        entries, drafts, chunks = self._fill()
        if not entries:
            return
        prompting = bool(chunks)
        started = time.perf_counter()
        status = self._decode(entries, prompting)
        if status == 2:  # a cancel came while a prompt chunk was evaluated: undo, go on
            for run in self._stepping:
                self.pool.cut(run.seq, len(run.seq.tokens))
            return
        if status != 0:
            self._failed(status)
            return
        if not prompting:
            self.costs.record(len(entries), (time.perf_counter() - started) * 1000)
        self._take(entries, drafts, chunks)

    def _fill(self) -> tuple[list[_Entry], dict[int, tuple[int, list[int]]], dict[int, int]]:
        """The batch: each decoding generation's next token and drafts, then prompt chunks
        where room is left (how many tokens of each prompt: taken from its `todo` once the step
        succeeded); the entries in the order of their sequences, as llama.cpp splits a batch
        whose sequences come out of order into more pieces, each a pass over the weights."""
        drafts: dict[int, tuple[int, list[int]]] = {}
        chunks: dict[int, int] = {}
        by_seq = sorted(self.active, key=lambda r: r.seq.id)
        decoding = [r for r in by_seq if r.next is not None]
        self._stepping = [r for r in by_seq if r.next is not None or r.todo]
        width = len(decoding)
        for run in decoding:
            kind, tokens = self._draft(run, width, self.n_batch - width - 1)
            if tokens:
                drafts[id(run)] = (kind, tokens)
                width += len(tokens)
        room = self.n_batch - width
        for run in [r for r in by_seq if r.todo]:
            text = next((i for i, t in enumerate(run.todo) if is_image(t)), len(run.todo))
            take = min(room, SHARED_CHUNK if decoding else room, text, self.chunk)
            if take <= 0:
                break
            chunks[id(run)] = take
            room -= take
        entries: list[_Entry] = []
        for run in self._stepping:
            base = len(run.seq.tokens)
            if run.next is not None:
                tokens = [run.next, *drafts.get(id(run), (0, []))[1]]
                entries += [(run, t, run.seq.id, base + i, True) for i, t in enumerate(tokens)]
            elif id(run) in chunks:
                take = chunks[id(run)]
                for i, token in enumerate(run.todo[:take]):
                    last = i == take - 1 and take == len(run.todo)
                    entries.append((run if last else None, token, run.seq.id, base + i, last))
        return entries, drafts, chunks

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

    def _draft(self, run: Running, batch: int, room: int) -> tuple[int, list[int]]:
        """The drafts to check for `run` this step (kind, tokens); none when not worth it."""
        limit = min(DRAFT_MAX, room, self.n_ctx - len(run.seq.tokens) - 2)
        if run.images and self.speculative == "draft":
            return 0, []  # the draft model reads the tokens; an image is none
        if self.speculative == "lookup" and run.lookup is not None and limit > 0:
            kind, proposal = run.lookup.propose(limit)
            if not proposal:
                return 0, []
            length = draft_length(run.acceptance.rate(kind), batch, self.costs, len(proposal))
            length = len(proposal) if self.always_draft else length
            if length == 0:
                run.acceptance.shadow(kind, len(run.lookup.tokens), proposal)
                return 0, []
            return kind, proposal[:length]
        if self.speculative == "draft" and self.draft is not None and limit > 0:
            run.steps += 1
            cost = self.draft.ms_per_token
            length = draft_length(run.acceptance.rate(0), batch, self.costs, limit, cost)
            if length == 0 and run.steps % PROBE_EVERY == 0:
                length = min(2, limit)
            length = min(DRAFT_MAX, limit) if self.always_draft else length
            history = [*run.seq.tokens, run.next if run.next is not None else 0]
            return 0, self.draft.propose(run.seq.id, history, length)
        return 0, []

    def _decode(self, entries: list[_Entry], prompting: bool) -> int:
        batch, low = self._batch, self.low
        for i, (_, token, seq, pos, logits) in enumerate(entries):
            batch.token[i], batch.pos[i] = token, pos
            batch.n_seq_id[i], batch.seq_id[i][0], batch.logits[i] = 1, seq, logits
        batch.n_tokens = len(entries)
        if prompting:
            low.llama_set_abort_callback(self.ctx, self._abort, None)
        try:
            return int(low.llama_decode(self.ctx, batch))
        finally:
            if prompting:
                low.llama_set_abort_callback(self.ctx, self._no_abort, None)

    def _abort_now(self) -> bool:
        return any(self._cancelled(run.req.request) for run in self._stepping)

    def _take(
        self,
        entries: list[_Entry],
        drafts: dict[int, tuple[int, list[int]]],
        chunks: dict[int, int],
    ) -> None:
        """Sample each generation from its rows, check its drafts, send, end what ended."""
        rows: dict[int, list[int]] = collections.defaultdict(list)
        for i, (run, *_rest, logits) in enumerate(entries):
            if run is not None and logits:
                rows[id(run)].append(i)
        for run in list(self._stepping):
            take = chunks.get(id(run), 0)
            if take:
                run.seq.tokens.extend(run.todo[:take])
                del run.todo[:take]
            if id(run) not in rows:
                continue  # a prompt chunk that did not end the prompt
            kind, tokens = drafts.get(id(run), (0, []))
            if run.next is not None:
                run.seq.tokens.append(run.next)
            held = len(run.seq.tokens)
            kept = self._verify(run, rows[id(run)], tokens)
            if tokens:
                run.drafted += len(tokens)
                run.accepted += kept
                run.acceptance.record(kind, len(tokens), kept)
                run.seq.tokens.extend(tokens[:kept])
                self.pool.cut(run.seq, held + kept)
            run.flush(self._send)
            if run.reason is not None:
                self._end(run)

    def _verify(self, run: Running, rows: list[int], drafts: list[int]) -> int:
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
