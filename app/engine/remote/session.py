"""Remote OpenAI-compatible endpoints (Databricks serving endpoints, vLLM, Ollama, LM Studio,
llama.cpp's server, OpenAI) through the `openai` SDK, behind the events a local model gives.

Guarantees:
- `RemoteSession.generate` streams the same events as `ChatSession.generate` (`MessageStarted`,
  `ContentDelta`, `MessageDone`, then one `GenerationDone` or `TurnFailed`) and returns a
  `Generation`: answers on `final`, reasoning the server returns on `analysis`, tool calls as
  `functions.NAME` messages on `commentary` with their JSON arguments, so approval, deadlines
  and the turn loop are shared with local models (`remote_reply` reads the stream); a call
  comes only from the API's `tool_calls`, unless the endpoint says its model's calls come as
  text (`tool_calls`: a family's format; `text_calls`: Harmony markup) — else text stays text;
- what is sent is the conversation the user sees (`remote_wire`), fitted first to the context
  under the request's `overflow` policy, estimated at four characters a token in `n_ctx`: the
  endpoint's `context` when the user set one, else what its server's model list says, asked
  once when the session first needs it (`remote_context`), else 8,192; the `ContextFit`
  before the request says what was left out or cut; its
  images go as `data:` URLs of their kept bytes, and an image no longer kept fails the turn
  (`TurnFailed`, E-INPUT-INVALID, naming it) before anything is sent; `RequestSent` carries
  the body with each image's data shortened (`for_the_record`);
- failures are plain and keep the conversation (`remote_retry` says what to do); a stream cut in
  the middle is E-STREAM-TRUNCATED with the partial text kept;
- the API key goes to the SDK only: it is never in an event, an error, a repr or a log line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

from app.constrain.constraint import validate_json
from app.domain.attachments import ESTIMATED_CONTEXT, estimate
from app.domain.endpoint import Endpoint
from app.domain.events import (
    FinishReason,
    GenerationDone,
    JsonChecked,
    RequestSent,
    ResponseReceived,
    Timings,
    TurnFailed,
)
from app.domain.messages import Conversation, Message, Role
from app.domain.sampling import Sampling
from app.engine.overflow import estimated_measure, estimated_prompt, fit
from app.engine.remote.context import Learned, entries, learn, listed_context
from app.engine.remote.reply import ReplyStream
from app.engine.remote.retry import Opener, RemoteError
from app.engine.remote.wire import for_the_record, openai_client, request_body
from app.engine.request import GenerationRequest
from app.engine.session import REMOTE, Capabilities, ChatEvent, Generation, TurnRecord
from app.errors import ErrorCode, InvalidInputError
from app.harmony.encoding import CALL
from app.templates.calls.format import declared_names
from app.templates.calls.formats import call_format
from app.templates.calls.scanner import CallScanner


class RemoteSession:
    """One conversation with a remote endpoint; the same `send` and `generate` as a local one."""

    def __init__(
        self,
        endpoint: Endpoint,
        key: str | None,
        *,
        sampling: Sampling | None = None,
        max_tokens: int = 1024,
        client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.gpt_oss = "gpt-oss" in endpoint.model.lower().replace("_", "-")
        self.client = client or openai_client(endpoint, key)
        self.sampling = sampling
        self.max_tokens = endpoint.max_tokens or max_tokens
        self.conversation = Conversation(messages=())
        self.turns: list[TurnRecord] = []
        self._open = Opener(endpoint, self.client, key, sleep)
        self.learned: Learned | None = None  # the context its server said, once asked
        self._asked = endpoint.context is not None  # the user's figure wins: never asked

    @property
    def n_ctx(self) -> int:
        """The endpoint's context: the user's, else its server's (asked on first use), else
        `ESTIMATED_CONTEXT`."""
        if self.endpoint.context is not None:
            return self.endpoint.context
        if not self._asked:
            self._asked = True
            self.learned = learn(self.endpoint, self.client)
        return self.learned.tokens if self.learned is not None else ESTIMATED_CONTEXT

    @property
    def capabilities(self) -> Capabilities:
        return REMOTE

    def count(self, text: str) -> int:
        return estimate(text)

    def prompt_size(self, conversation: Conversation) -> int:
        return estimated_prompt(conversation)

    def room(self, text: str, conversation: Conversation | None = None) -> int:
        """The room for `text` in the context known so far (the server is never asked here:
        this may be called off the engine thread)."""
        learned = self.learned.tokens if self.learned is not None else ESTIMATED_CONTEXT
        known = self.endpoint.context or learned
        return max(0, known - estimate(text) - self.max_tokens)

    @property
    def name(self) -> str:
        """The endpoint's model, as its server names it."""
        return self.endpoint.model

    def token_table(self) -> Sequence[bytes]:
        return ()

    def __repr__(self) -> str:
        return f"RemoteSession({self.endpoint.name!r}, {self.endpoint.base_url!r})"

    def request(self, conversation: Conversation, request: GenerationRequest) -> dict[str, Any]:
        """The body of the chat-completion request for `conversation` (no key in it)."""
        return request_body(
            self.endpoint,
            request.sampling.over(self.sampling),
            self.max_tokens,
            conversation,
            max_tokens=request.max_tokens,
            response_format=request.response_format,
            tool_choice=request.tool_choice,
            reasoning_effort=request.effort,
            stop=request.stops,
        )

    def generate(
        self,
        conversation: Conversation,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
    ) -> Generator[ChatEvent, None, Generation]:
        """One streamed reply for `conversation`: events, then the parsed result returned.
        No local grammar applies: the request names the tools and the response format, and
        the server holds to them (a JSON answer is checked after, `JsonChecked`); it cannot
        continue from token ids (`capabilities.continues_prefix` is False)."""
        measured = estimated_measure(self.n_ctx, request.max_tokens or self.max_tokens)
        fitted = fit(conversation, measured, request.overflow)
        yield fitted.event
        try:
            body = self.request(fitted.conversation, request)
        except InvalidInputError as exc:  # an image no longer kept
            yield TurnFailed(exc.message, exc.code)
            return Generation([], None, exc.message, False, None, conversation=conversation)
        cancel = cancel or threading.Event()
        yield RequestSent(self.endpoint.name, for_the_record(body))
        start = time.monotonic()
        fmt = call_format(self.endpoint.tool_calls)
        state = ReplyStream(
            gpt_oss=self.gpt_oss,
            scanner=CallScanner(fmt.knowing(declared_names(conversation))) if fmt else None,
            harmony_calls=self.endpoint.text_calls,
        )
        failed = yield from self._stream(body, cancel, state, start)
        complete = failed is None and state.finish not in ("length", "cancelled", None)
        yield from state.end(start, complete)
        out = yield from self._said(state, failed, start)
        if request.response_format is not None:
            for m in out.messages:
                if m.channel == "final":
                    verdict = validate_json(
                        m.text, request.schema, complete=out.finished, planned=False
                    )
                    yield JsonChecked("answer", verdict)
        out.conversation = conversation
        return out

    def _stream(
        self, body: dict[str, Any], cancel: threading.Event, state: ReplyStream, start: float
    ) -> Generator[ChatEvent, None, TurnFailed | None]:
        """The reply's chunks as events; why it failed, or None."""
        try:
            chunks = yield from self._open(body, cancel)
            if chunks is None:
                state.finish = "cancelled"
                return None
            try:
                for chunk in chunks:
                    yield from state.chunk(chunk, start)
                    if cancel.is_set():
                        state.finish = "cancelled"
                        break
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
        except RemoteError as exc:
            return TurnFailed(f"{exc.code.value}: {exc.message}", exc.code)
        except Exception as exc:  # the SDK and its HTTP client raise many kinds mid-stream
            return _truncated(
                f"the connection to {self.endpoint.name} broke during the answer"
                f" ({type(exc).__name__}); the text so far is kept"
            )
        if state.finish is None:
            return _truncated(
                f"the stream from {self.endpoint.name} ended before the answer did;"
                " the text so far is kept"
            )
        return None

    def _said(
        self, state: ReplyStream, failed: TurnFailed | None, start: float
    ) -> Generator[ChatEvent, None, Generation]:
        """What the server said about the reply, how it ended, and the generation."""
        usage = state.usage
        timings = Timings(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            prompt_evaluated=getattr(usage, "prompt_tokens", 0) or 0,
            first_token_ms=state.first_token_ms,
            total_ms=(time.monotonic() - start) * 1000,
            generated=getattr(usage, "completion_tokens", 0) or state.chunks,
        )
        counted = {"prompt_tokens": timings.prompt_tokens, "completion_tokens": timings.generated}
        yield ResponseReceived(
            self.endpoint.name,
            state.response_id,
            "failed" if failed is not None else state.finish or "",
            counted if usage is not None else {},
            tuple(state.logprobs),
            tuple(state.top),
        )
        if failed is not None:
            yield failed
        else:
            reason = {
                "length": FinishReason.LENGTH,
                "cancelled": FinishReason.CANCELLED,
            }.get(state.finish or "", FinishReason.STOP)
            yield GenerationDone(reason, None, timings)
        return Generation(
            state.messages,
            timings,
            failed.reason if failed is not None else None,
            failed is None and state.finish not in ("length", "cancelled"),
            CALL if state.ended_in_calls and failed is None else None,  # as <|call|>
            called=state.ended_in_calls and failed is None,
        )


def _truncated(words: str) -> TurnFailed:
    code = ErrorCode.STREAM_TRUNCATED
    return TurnFailed(f"{code.value}: {words}", code)


def check_connection(endpoint: Endpoint, key: str | None, client: Any = None) -> tuple[bool, str]:
    """Whether `endpoint` answers, and what it said: its models when it lists them (and the
    context its model has, where the server says), else the outcome of a one-token request
    (Databricks serving endpoints do not list models)."""
    session = RemoteSession(endpoint, key, max_tokens=1, client=client)
    try:
        listed = entries(session.client)
    except Exception:  # not every server lists models: ask for one token instead
        listed = []
    session._asked = True  # the list was read: the one-token request does not ask again
    names = sorted(str(e.get("id")) for e in listed)
    if names:
        offered = "offered" if endpoint.model in names else "NOT offered"
        said = (
            f"{endpoint.name} answers; its models: {', '.join(names)} ({endpoint.model} {offered})"
        )
        heard = listed_context(endpoint, listed, session.client)
        return endpoint.model in names, f"{said}; {context_said(endpoint, heard)}"
    ping = Conversation(messages=(Message.of(Role.USER, "ping"),))
    one = GenerationRequest(max_tokens=1)
    failed = [e.reason for e in session.generate(ping, one) if isinstance(e, TurnFailed)]
    if failed:
        return False, failed[0]
    said = f"{endpoint.name} answers ({endpoint.model} replied to a one-token request)"
    return True, f"{said}; {context_said(endpoint, None)}"


def context_said(endpoint: Endpoint, heard: Learned | None) -> str:
    """The context the app uses for `endpoint`, and where it comes from (`heard`: what its
    server says)."""
    if endpoint.context is not None:
        server = f"; its server says {heard.said()}" if heard is not None else ""
        return f"context {endpoint.context:,} tokens (set for this endpoint{server})"
    if heard is not None:
        return f"context {heard.said()}"
    return (
        f"context not said by the server: {ESTIMATED_CONTEXT:,} tokens assumed"
        f" (set it with `harmony-desk endpoints add {endpoint.name} ... --context N`)"
    )
