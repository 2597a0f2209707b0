"""A scripted token source with the worker's `generate` seam, for UI and flow tests and demos.

It replays token ids given in advance (Harmony token text is encoded with the special
tokens), one script per call, with the same event types as the real worker. It never stands
in for the real-model tests; it sits beside them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

from app.domain.events import FinishReason, GenerationDone, GenerationEvent, Timings, TokenStep
from app.domain.sampling import Sampling
from app.engine.protocol import ModelInfo, Specials, WorkerState
from app.harmony import encoding as enc


class ScriptedClient:
    """Replays scripted generations in order."""

    def __init__(self, scripts: Sequence[str | Sequence[int]], *, delay_s: float = 0.0) -> None:
        self.encoding = enc.load_encoding()
        self.delay_s = delay_s  # pause before each token: a paced source for stop tests and benches
        self._scripts = [
            self.encoding.encode_with_specials(s) if isinstance(s, str) else list(s)
            for s in scripts
        ]
        self.prompts: list[list[int]] = []
        self.constraints: list[object] = []  # what each generation was asked to enforce
        self.state = WorkerState.READY
        self.info: ModelInfo | None = ModelInfo(
            "scripted", enc.N_VOCAB, 8192, 131072, "gpt-oss", 1, 0.0
        )

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        stop_ids: Sequence[int],
        sampling: Sampling | None = None,
        max_tokens: int = 512,
        constraint: object = None,
        cancel: threading.Event | None = None,
        top_logprobs: int = 0,  # a script has no logits: its tokens come unscored
        keep: object = None,  # nor a KV cache to keep
        reserved: bool = False,  # nor sequences: one script at a time
    ) -> Iterator[GenerationEvent]:
        self.prompts.append(list(prompt_ids))
        self.constraints.append(constraint)
        script = self._scripts.pop(0) if self._scripts else []
        reason, stop_id, count = FinishReason.LENGTH, None, 0
        for count, token in enumerate(script[:max_tokens], 1):
            if self.delay_s:
                time.sleep(self.delay_s)
            yield TokenStep(token, float(count))
            if token in stop_ids:
                reason, stop_id = FinishReason.STOP, token
                break
            if cancel is not None and cancel.is_set():
                reason = FinishReason.CANCELLED
                break
        yield GenerationDone(
            reason, stop_id, Timings(prompt_tokens=len(prompt_ids), generated=count)
        )

    def specials(self) -> Specials:
        return Specials(bos=enc.START_OF_TEXT, eos=enc.RETURN, add_bos=False)

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.encoding.token_bytes(t) for t in ids]

    def tokenize(self, text: str, special: bool) -> list[int]:
        if special:
            return list(self.encoding.encode_with_specials(text))
        return list(self.encoding.encode_ordinary(text))

    def token_table(self) -> list[bytes]:
        return list(self.encoding.token_table)


class ScriptedServer:
    """A scripted OpenAI-compatible server for the remote path: `chat.completions.create`
    streams the given content chunks, one generation per call, as chat-completion chunks (what
    a server that passes gpt-oss markup through as text sends)."""

    def __init__(self, generations: Sequence[Sequence[str]], finish: str = "stop") -> None:
        self._generations = [list(g) for g in generations]
        self.finish = finish  # "length": the text ended without its stop token
        self.bodies: list[dict[str, object]] = []
        self.chat = _Namespace(completions=_Namespace(create=self._create))
        self.models = _Namespace(list=list)

    def _create(self, **body: object) -> Iterator[object]:
        self.bodies.append(body)
        chunks = self._generations.pop(0) if self._generations else []
        for i, text in enumerate(chunks):
            delta = _Namespace(content=text, tool_calls=None, model_extra={})
            last = i == len(chunks) - 1
            choice = _Namespace(
                delta=delta, finish_reason=self.finish if last else None, logprobs=None
            )
            yield _Namespace(id="scripted-1", choices=[choice], usage=None)
        if not chunks:
            delta = _Namespace(content=None, tool_calls=None, model_extra={})
            choice = _Namespace(delta=delta, finish_reason=self.finish, logprobs=None)
            yield _Namespace(id="scripted-1", choices=[choice], usage=None)


class _Namespace:
    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)
