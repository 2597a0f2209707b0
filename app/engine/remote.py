"""Remote OpenAI-compatible endpoints (Databricks serving endpoints, vLLM, Ollama, LM Studio,
llama.cpp's server, OpenAI) through the `openai` SDK, behind the events a local model gives.

Guarantees:
- `RemoteSession.generate` streams the same events as `ChatSession.generate` (`MessageStarted`,
  `ContentDelta`, `MessageDone`, then one `GenerationDone` or `TurnFailed`) and returns a
  `Generation`: answers on `final`, reasoning the server returns (`reasoning_content`,
  `reasoning`, `thinking`, or Databricks' typed content parts `{"type": "reasoning",
  "summary": [...]}` beside `{"type": "text"}`) on `analysis`, tool calls as `functions.NAME`
  messages on `commentary` with their JSON arguments, so approval, deadlines and the turn loop
  are shared with local models;
- what is sent is the conversation the user sees: analysis is never sent back, developer
  instructions go as a system message, tool calls and their results keep their pairing;
- failures are plain and keep the conversation: 401/403 say which key to fix and how; 404 lists
  the models the server offers; 429 waits per Retry-After (or backs off) and says so; 5xx,
  connection errors and timeouts are retried with backoff before any text arrived, then the
  turn fails; a stream cut in the middle is E-STREAM-TRUNCATED with the partial text kept;
- the API key goes to the SDK only: it is never in an event, an error, a repr or a log line.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.endpoint import Endpoint
from app.domain.events import (
    ContentDelta,
    MessageDone,
    MessageStarted,
    ParseEvent,
    ParseIssue,
    Severity,
    StopReason,
    TurnDone,
)
from app.domain.events import (  # re-exported: the one event union lives in domain
    RequestSent as RequestSent,
)
from app.domain.events import (
    ResponseReceived as ResponseReceived,
)
from app.domain.messages import (
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
)
from app.domain.redact import redact
from app.domain.sampling import Sampling
from app.domain.visibility import Lane, is_tool_recipient, route
from app.engine.chat import ChatEvent, Generation, JsonChecked, TurnRecord
from app.engine.constraint import ResponseFormat, ToolChoice, validate_json
from app.engine.protocol import FinishReason, GenerationDone, Timings, TurnFailed
from app.errors import ErrorCode, HarmonyDeskError
from app.harmony.encoding import CALL
from app.harmony.text_stream import HarmonyText


class RemoteError(HarmonyDeskError):
    """A request the endpoint refused, with what to do about it."""

    def __init__(
        self, message: str, code: ErrorCode = ErrorCode.NETWORK, known: tuple[str | None, ...] = ()
    ) -> None:
        message = redact(message, known)  # a server's text may carry a key or a token
        super().__init__(message)
        self.message, self.code = message, code


def openai_client(endpoint: Endpoint, key: str | None) -> Any:
    """The SDK client for `endpoint` (its own retries off: this module retries and says so)."""
    from openai import OpenAI

    return OpenAI(
        base_url=endpoint.base_url,
        api_key=key or "no-key",
        timeout=endpoint.timeout_s,
        max_retries=0,
    )


def to_openai(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation as chat-completion messages (analysis left out, calls paired)."""
    out: list[dict[str, Any]] = []
    calls: list[str] = []  # ids of the calls whose results are still to come, in order
    for m in conversation.messages:
        role = m.author.role
        if role is Role.SYSTEM:
            continue  # Harmony's system message (identity, dates, channels) is for gpt-oss only
        if role is Role.DEVELOPER:
            developer = next((c for c in m.content if isinstance(c, DeveloperContent)), None)
            if developer is not None and developer.instructions:
                out.append({"role": "system", "content": developer.instructions})
        elif role is Role.USER:
            out.append({"role": "user", "content": m.text})
        elif role is Role.TOOL:
            call_id = calls.pop(0) if calls else f"call_{len(out)}"
            out.append({"role": "tool", "tool_call_id": call_id, "content": m.text})
        elif m.channel == "analysis":
            continue  # reasoning is never sent back
        elif is_tool_recipient(m.recipient) and m.recipient:
            call_id = f"call_{len(out)}"
            calls.append(call_id)
            function = {"name": m.recipient.removeprefix("functions."), "arguments": m.text}
            call = {"id": call_id, "type": "function", "function": function}
            if out and out[-1]["role"] == "assistant" and "tool_calls" in out[-1]:
                out[-1]["tool_calls"].append(call)  # parallel calls: one assistant message
            else:
                # "" rather than null: servers that validate strictly refuse a null content
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        else:
            out.append({"role": "assistant", "content": m.text})
    return out


def _functions(conversation: Conversation) -> list[dict[str, Any]]:
    """The function tools the developer message declares, in the chat-completion shape."""
    for m in conversation.messages:
        for c in m.content:
            if isinstance(c, DeveloperContent) and c.tools and "functions" in c.tools:
                return [
                    {
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters or {"type": "object", "properties": {}},
                        },
                    }
                    for t in c.tools["functions"].tools
                ][:32]
    return []


@dataclass
class _Open:
    lane: Lane
    channel: str
    recipient: str | None
    content_type: str | None
    parts: list[str] = field(default_factory=list)


@dataclass
class _Stream:
    """What one streamed reply has produced so far."""

    messages: list[Message] = field(default_factory=list)
    open: _Open | None = None  # the message being written
    mode: str | None = None  # "plain", or "harmony" (a server passing gpt-oss markup through)
    pending: str = ""  # the reply's first text, until it shows which
    harmony: HarmonyText | None = None  # the token parser, once the text shows it is markup
    harmony_index: dict[int, int] = field(default_factory=dict)  # parser's index → the reply's

    @property
    def ended_in_calls(self) -> bool:
        """Calls the server returned as tool_calls, or markup that ended in `<|call|>`."""
        text_call = self.harmony is not None and self.harmony.parser.stop is StopReason.CALL
        return bool(self.calls) or text_call

    calls: dict[int, dict[str, str]] = field(default_factory=dict)  # index → id, name, arguments
    finish: str | None = None
    usage: Any = None
    response_id: str = ""
    logprobs: list[tuple[str, float]] = field(default_factory=list)
    chunks: int = 0  # content chunks: the generated count where the server reports no usage
    first_token_ms: float = 0.0


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
        self._key = key
        self.gpt_oss = "gpt-oss" in endpoint.model.lower().replace("_", "-")
        self.client = client or openai_client(endpoint, key)
        self.sampling = sampling
        self.max_tokens = endpoint.max_tokens or max_tokens
        self.conversation = Conversation(messages=())
        self.turns: list[TurnRecord] = []
        self._sleep = sleep
        # what the turn loop asks of a local session: a remote one has no template, grammar
        # or vocabulary of ours (the server is told the tools and tool_choice instead)
        self.template = None
        self.thinking_budget = None
        self.tokenizer = None

    def __repr__(self) -> str:
        return f"RemoteSession({self.endpoint.name!r}, {self.endpoint.base_url!r})"

    def send(
        self,
        text: str,
        *,
        reasoning_effort: ReasoningEffort | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        response_format: ResponseFormat | None = None,
        tool_choice: ToolChoice = "auto",
        stop: Sequence[str] = (),
    ) -> Iterator[ChatEvent]:
        """Send a user message and stream the reply's events (`stop`: words that end it)."""
        conversation = self.conversation.with_message(Message.of(Role.USER, text))
        self.conversation = conversation
        out = yield from self.generate(
            conversation,
            max_tokens=max_tokens,
            cancel=cancel,
            response_format=response_format,
            tool_choice=tool_choice,
            reasoning_effort=reasoning_effort,
            stop=stop,
        )
        self.conversation = conversation.with_messages(out.messages)
        index = len(conversation.messages) - 1
        self.turns.append(TurnRecord(index, reasoning_effort, out.timings, out.failed))
        schema = response_format.json_schema_dict if response_format else None
        if response_format is not None:
            for m in out.messages:
                if m.channel == "final":
                    yield JsonChecked(
                        "answer", validate_json(m.text, schema, complete=out.finished)
                    )

    def request(
        self,
        conversation: Conversation,
        *,
        max_tokens: int | None = None,
        response_format: ResponseFormat | None = None,
        tool_choice: ToolChoice = "auto",
        reasoning_effort: ReasoningEffort | None = None,
        stop: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The body of the chat-completion request for `conversation` (no key in it)."""
        e, s = self.endpoint, self.sampling
        body: dict[str, Any] = {
            "model": e.model,
            "messages": to_openai(conversation),
            "max_tokens": max_tokens or self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        temperature = e.temperature if e.temperature is not None else s and s.temperature
        top_p = e.top_p if e.top_p is not None else s and s.top_p
        top_k = e.top_k if e.top_k is not None else s and s.top_k
        if temperature is not None:
            body["temperature"] = temperature
        if top_p:
            body["top_p"] = top_p
        if top_k:
            body["extra_body"] = {"top_k": top_k}
        if s is not None and s.seed is not None:
            body["seed"] = s.seed
        if stop:
            body["stop"] = list(stop)[:4]
        if e.top_logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = e.top_logprobs
        tools = _functions(conversation)
        if tools:
            body["tools"] = tools
            body["tool_choice"] = (
                tool_choice
                if tool_choice in ("auto", "none", "required")
                else {"type": "function", "function": {"name": tool_choice}}
            )
        if response_format is not None and response_format.type == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif response_format is not None and response_format.type == "json_schema":
            spec = response_format.json_schema
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": spec.name if spec else "response",
                    "schema": response_format.json_schema_dict,
                    "strict": True,
                },
            }
        if reasoning_effort is not None:
            body["reasoning_effort"] = reasoning_effort.value
        return body

    def generate(
        self,
        conversation: Conversation,
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        response_format: ResponseFormat | None = None,
        tool_choice: ToolChoice = "auto",
        reasoning_effort: ReasoningEffort | None = None,
        stop: Sequence[str] = (),
        constraint: object = None,
        prefix: Sequence[int] = (),
    ) -> Generator[ChatEvent, None, Generation]:
        """One streamed reply for `conversation`: events, then the parsed result returned.
        `constraint` (a local grammar) does not apply: the request names the tools and the
        response format; `prefix` (continuing from token ids) cannot be done remotely."""
        if prefix:
            reason = (
                "continuing a cut answer from its tokens is not available with a remote"
                " endpoint; regenerate it instead"
            )
            yield TurnFailed(reason)
            return Generation([], None, reason, False, None)
        body = self.request(
            conversation,
            max_tokens=max_tokens,
            response_format=response_format,
            tool_choice=tool_choice,
            reasoning_effort=reasoning_effort,
            stop=stop,
        )
        cancel = cancel or threading.Event()
        yield RequestSent(self.endpoint.name, body)  # type: ignore[misc]
        start = time.monotonic()
        state = _Stream()
        failed = yield from self._stream(body, cancel, state, start)
        complete = failed is None and state.finish not in ("length", "cancelled", None)
        yield from self._end_content(state, start, complete)
        yield from self._close_open(state, complete=complete)
        yield from self._emit_calls(state, start)
        return (yield from self._said(state, failed, start))

    def _stream(
        self, body: dict[str, Any], cancel: threading.Event, state: _Stream, start: float
    ) -> Generator[ChatEvent, None, str | None]:
        """The reply's chunks as events; why it failed, or None."""
        try:
            chunks = yield from self._open(body, cancel)
            if chunks is None:
                state.finish = "cancelled"
                return None
            try:
                for chunk in chunks:
                    yield from self._chunk(chunk, state, start)
                    if cancel.is_set():
                        state.finish = "cancelled"
                        break
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
        except RemoteError as exc:
            return f"{exc.code.value}: {exc.message}"
        except Exception as exc:  # the SDK and its HTTP client raise many kinds mid-stream
            return (
                f"{ErrorCode.STREAM_TRUNCATED.value}: the connection to {self.endpoint.name} broke"
                f" during the answer ({type(exc).__name__}); the text so far is kept"
            )
        if state.finish is None:
            return (
                f"{ErrorCode.STREAM_TRUNCATED.value}: the stream from {self.endpoint.name} ended"
                " before the answer did; the text so far is kept"
            )
        return None

    def _said(
        self, state: _Stream, failed: str | None, start: float
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
        yield ResponseReceived(  # type: ignore[misc]
            self.endpoint.name,
            state.response_id,
            "failed" if failed is not None else state.finish or "",
            counted if usage is not None else {},
            tuple(state.logprobs),
        )
        if failed is not None:
            yield TurnFailed(failed)
        else:
            reason = {
                "length": FinishReason.LENGTH,
                "cancelled": FinishReason.CANCELLED,
            }.get(state.finish or "", FinishReason.STOP)
            yield GenerationDone(reason, None, timings)
        return Generation(
            state.messages,
            timings,
            failed,
            failed is None and state.finish not in ("length", "cancelled"),
            CALL if state.ended_in_calls and failed is None else None,  # as <|call|>
        )

    # --- the request, with retries -------------------------------------------------

    def _open(
        self, body: dict[str, Any], cancel: threading.Event
    ) -> Generator[ChatEvent, None, Any]:
        """The stream of chunks, after retrying what may be retried (None: cancelled)."""
        import openai

        e = self.endpoint
        for attempt in range(e.retries + 1):
            last = attempt == e.retries
            try:
                return self.client.chat.completions.create(**body)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                where = (
                    f"the key '{e.key_name}' (set it with `harmony-desk keys set {e.key_name}`)"
                    if e.key_name
                    else f"a key: this endpoint has none (`harmony-desk endpoints add {e.name}"
                    " ... --key-name NAME`, then `harmony-desk keys set NAME`)"
                )
                raise RemoteError(
                    f"{e.name} refused the request ({exc.status_code}): check {where}"
                ) from None
            except openai.NotFoundError:
                raise RemoteError(
                    f"{e.name} has no model '{e.model}'; it offers: {self._offered()}"
                ) from None
            except openai.RateLimitError as exc:
                if last:
                    raise RemoteError(
                        f"{e.name} is still rate limiting after {attempt} waits"
                    ) from None
                wait = _retry_after(exc.response) or _backoff(attempt)
                yield ParseIssue(
                    ErrorCode.NETWORK,
                    f"{e.name} is rate limiting (429); waiting {wait:.0f} s before trying again",
                    Severity.WARNING,
                )
            except (openai.InternalServerError, openai.APIConnectionError) as exc:
                # a timeout is a connection error to the SDK
                if last:
                    raise RemoteError(
                        f"{e.name} failed {attempt + 1} times ({_describe(exc)}); try again later"
                    ) from None
                wait = _backoff(attempt)
                yield ParseIssue(
                    ErrorCode.NETWORK,
                    f"{e.name}: {_describe(exc)}; trying again in {wait:.0f} s",
                    Severity.WARNING,
                )
            except openai.APIStatusError as exc:
                raise RemoteError(
                    f"{e.name} refused the request ({exc.status_code}): {_detail(exc)}",
                    known=(self._key,),
                ) from None
            if _wait(wait, cancel, self._sleep):
                return None
        raise AssertionError("unreachable")

    def _offered(self) -> str:
        try:
            names = sorted(m.id for m in self.client.models.list())
        except Exception:  # listing is a courtesy
            return "(the list of models could not be read)"
        return ", ".join(names) or "(no models)"

    # --- chunks to events ----------------------------------------------------------

    def _chunk(self, chunk: Any, state: _Stream, start: float) -> Iterator[ChatEvent]:
        if getattr(chunk, "usage", None) is not None:
            state.usage = chunk.usage
        state.response_id = getattr(chunk, "id", "") or state.response_id
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            for item in getattr(getattr(choice, "logprobs", None), "content", None) or ():
                state.logprobs.append((str(item.token), float(item.logprob)))
            reasoning = "".join(_field(delta, name) for name in _REASONING_FIELDS)
            if reasoning:
                yield from self._text(state, Lane.ANALYSIS, reasoning, start)
            content = getattr(delta, "content", None)
            if isinstance(content, list):  # typed parts (Databricks serving endpoints)
                for is_reasoning, text in _typed_parts(content):
                    if is_reasoning:
                        yield from self._text(state, Lane.ANALYSIS, text, start)
                    else:
                        yield from self._content(state, text, start)
            elif content:
                yield from self._content(state, content, start)
            for call in getattr(delta, "tool_calls", None) or ():
                if not state.first_token_ms:
                    state.first_token_ms = (time.monotonic() - start) * 1000
                slot = state.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                function = call.function
                slot["id"] = call.id or slot["id"]
                if function is not None:
                    name = function.name or ""
                    # some servers repeat the whole name in every chunk, others send it once
                    if not slot["name"] or name.startswith(slot["name"]):
                        slot["name"] = name or slot["name"]
                    else:
                        slot["name"] += name
                    slot["arguments"] += function.arguments or ""
            if choice.finish_reason:
                state.finish = choice.finish_reason

    def _content(self, state: _Stream, text: str, start: float) -> Iterator[ChatEvent]:
        """Answer text; or, from a server that passes gpt-oss output through, Harmony markup
        read here so that analysis never shows as answer text."""
        if state.mode is None:
            state.pending += text
            mode = _mode_of(state.pending, self.gpt_oss)
            if mode is None:
                return  # it may still turn out to be markup
            state.mode = mode
            text, state.pending = state.pending, ""
        if state.mode == "plain":
            yield from self._text(state, Lane.ANSWER, text, start)
            return
        state.chunks += 1
        if state.harmony is None:
            state.harmony = HarmonyText()
        yield from self._parsed(state, state.harmony.feed(text), start)

    def _parsed(
        self, state: _Stream, events: list[ParseEvent], start: float
    ) -> Iterator[ChatEvent]:
        """The token parser's events as this reply's (indices counted in the reply); its
        `TurnDone` says how the model's output ended, as a local parser's does."""
        for event in events:
            if isinstance(event, ParseIssue | TurnDone):
                yield event
                continue
            if isinstance(event, MessageStarted):
                yield from self._close_open(state, complete=True)
                state.harmony_index[event.index] = len(state.messages)
            elif isinstance(event, ContentDelta) and not state.first_token_ms:
                state.first_token_ms = (time.monotonic() - start) * 1000
            if isinstance(event, MessageStarted | ContentDelta | MessageDone):
                index = state.harmony_index.get(event.index, len(state.messages))
                yield dataclasses.replace(event, index=index)
                if isinstance(event, MessageDone):
                    state.messages.append(event.message)

    def _end_content(self, state: _Stream, start: float, complete: bool) -> Iterator[ChatEvent]:
        """What the reply's text left open when the stream ended."""
        if state.mode is None and state.pending:
            state.mode = _mode_of(state.pending, self.gpt_oss, final=True)
            text, state.pending = state.pending, ""
            yield from self._content(state, text, start)
        if state.mode == "harmony" and state.harmony is not None:
            yield from self._parsed(state, state.harmony.finish(complete), start)

    def _text(self, state: _Stream, lane: Lane, text: str, start: float) -> Iterator[ChatEvent]:
        state.chunks += 1
        if state.open is None or state.open.lane is not lane:
            yield from self._close_open(state, complete=True)
            yield from self._start(state, "analysis" if lane is Lane.ANALYSIS else "final")
        yield from self._append(state, text, start)

    def _start(
        self,
        state: _Stream,
        channel: str,
        recipient: str | None = None,
        content_type: str | None = None,
    ) -> Iterator[ChatEvent]:
        lane = route(Role.ASSISTANT, channel, recipient)
        state.open = _Open(lane, channel, recipient, content_type)
        index = len(state.messages)
        yield MessageStarted(index, Role.ASSISTANT, None, channel, recipient, content_type, lane)

    def _append(self, state: _Stream, text: str, start: float) -> Iterator[ChatEvent]:
        assert state.open is not None
        if not state.first_token_ms:
            state.first_token_ms = (time.monotonic() - start) * 1000
        state.open.parts.append(text)
        yield ContentDelta(len(state.messages), text, state.open.lane)

    def _close_open(self, state: _Stream, complete: bool) -> Iterator[ChatEvent]:
        o = state.open
        if o is None:
            return
        message = Message.of(
            Role.ASSISTANT,
            "".join(o.parts),
            channel=o.channel,
            recipient=o.recipient,
            content_type=o.content_type,
        )
        yield MessageDone(len(state.messages), message, o.lane, complete, ())
        state.messages.append(message)
        state.open = None

    def _emit_calls(self, state: _Stream, start: float) -> Iterator[ChatEvent]:
        for _, call in sorted(state.calls.items()):
            recipient = f"functions.{call['name']}"
            yield from self._start(state, "commentary", recipient, "<|constrain|>json")
            yield from self._append(state, call["arguments"], start)
            yield from self._close_open(state, complete=True)


def check_connection(endpoint: Endpoint, key: str | None, client: Any = None) -> tuple[bool, str]:
    """Whether `endpoint` answers, and what it said: its models when it lists them, else the
    outcome of a one-token request (Databricks serving endpoints do not list models)."""
    session = RemoteSession(endpoint, key, max_tokens=1, client=client)
    try:
        names = sorted(m.id for m in session.client.models.list())
    except Exception:  # not every server lists models: ask for one token instead
        names = []
    if names:
        offered = "offered" if endpoint.model in names else "NOT offered"
        return endpoint.model in names, (
            f"{endpoint.name} answers; its models: {', '.join(names)} ({endpoint.model} {offered})"
        )
    ping = Conversation(messages=(Message.of(Role.USER, "ping"),))
    failed = [e.reason for e in session.generate(ping, max_tokens=1) if isinstance(e, TurnFailed)]
    if failed:
        return False, failed[0]
    return True, f"{endpoint.name} answers ({endpoint.model} replied to a one-token request)"


_REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")
_MARKERS = (
    "<|channel|>",
    "<|start|>",
    "<|message|>",
    "<|constrain|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
)


_GPT_OSS_WAIT = 240  # characters of a gpt-oss reply's first text that may precede its markup


def _mode_of(head: str, gpt_oss: bool, final: bool = False) -> str | None:
    """ "harmony" when a reply's first text holds Harmony markup, "plain" once it cannot, None
    while unsure. A gpt-oss model's raw output may put a header or a whole headerless message
    first (` to=functions.f<|channel|>…`, W01, W24), so its text waits up to `_GPT_OSS_WAIT`
    characters for markup; a server that parses Harmony itself sends plain text, which then
    streams as the answer."""
    text = head.lstrip()
    if any(m in head for m in _MARKERS):
        return "harmony"
    if final:  # a short gpt-oss reply is read as its raw output would be, by the parser
        return "harmony" if gpt_oss else "plain"
    if not text or any(m.startswith(text) for m in _MARKERS):
        return None
    if gpt_oss and len(text) < _GPT_OSS_WAIT:
        return None
    return "plain"


def _part_value(part: Any, name: str) -> Any:
    return part.get(name) if isinstance(part, dict) else getattr(part, name, None)


def _typed_parts(parts: list[Any]) -> Iterator[tuple[bool, str]]:
    """(is reasoning, text) of each typed content part: `{"type": "reasoning", "summary":
    [{"type": "summary_text", "text": ...}]}` (or its `content` of `reasoning_text` parts) is
    reasoning; `text` and `output_text` parts are the answer; other types carry no text."""
    for part in parts:
        kind = _part_value(part, "type")
        if kind == "reasoning":
            inner = (_part_value(part, "summary") or []) + (_part_value(part, "content") or [])
            text = "".join(str(_part_value(p, "text") or "") for p in inner)
            if text:
                yield True, text
        elif kind in ("text", "output_text"):
            text = str(_part_value(part, "text") or "")
            if text:
                yield False, text


def _field(delta: Any, name: str) -> str:
    """A field the SDK's delta model does not declare but servers send (reasoning)."""
    value = getattr(delta, name, None)
    if value is None:
        extra = getattr(delta, "model_extra", None) or {}
        value = extra.get(name)
    return value if isinstance(value, str) else ""


def _retry_after(response: Any) -> float | None:
    header = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return min(60.0, max(0.0, float(header))) if header is not None else None
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    return float(min(30, 2**attempt))


def _wait(seconds: float, cancel: threading.Event, sleep: Callable[[float], None]) -> bool:
    """Sleep `seconds` in small steps; True when cancelled meanwhile."""
    slept = 0.0
    while slept < seconds:
        if cancel.is_set():
            return True
        step = min(0.1, seconds - slept)
        sleep(step)
        slept += step
    return cancel.is_set()


def _describe(exc: Exception) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "no answer within the time limit"
    if isinstance(exc, openai.APIStatusError):
        return f"server error {exc.status_code}"
    return "cannot connect"


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if message:
            return str(message)[:300]
    return json.dumps(body)[:300] if body is not None else str(exc)[:300]


__all__ = [
    "Endpoint",
    "RemoteError",
    "RemoteSession",
    "RequestSent",
    "ResponseReceived",
    "check_connection",
    "openai_client",
    "to_openai",
]
