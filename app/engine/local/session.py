"""A chat with one loaded model: render → generate → parse, turn after turn; every knob of a
generation comes in its `GenerationRequest` (`app/engine/request.py`).

Guarantees: the same typed events for every template (Harmony's parser, or the text parser
with `<think>` routing); the partial output of a failed or cancelled turn is kept in the
conversation; the reasoning effort chosen for a message is recorded with its turn; a
grammar is made in one place (`_constraint`) for every caller; a
follow-up turn shares the KV cache with the previous one for the unchanged prefix (its
timings say how much was reused). With a `response_format` (JSON mode) or declared function
tools, the worker enforces the grammar, and every JSON answer or tool call is checked with
`jsonschema` afterwards (`JsonChecked`): a cut-off answer is E-STREAM-TRUNCATED, never valid;
an answer that breaks a keyword the grammar could not enforce is generated again from before
the offending value, that value's earlier choices excluded — and the last retry for a
violation from before the offending member itself, so that the answer may leave it out
(`JsonRetried`, at most `MAX_RETRIES` times for one violation and `MAX_RETRIES_IN_ALL` for
the answer, within the same `max_tokens`); the last attempt's verdict is reported. Each
generation's conversation is fitted once to the context under the request's `overflow` policy
(`app/engine/overflow.py`): its `ContextFit` says the budget and what was left out or cut.
"""

from __future__ import annotations

import codecs
import collections
import dataclasses
import datetime as dt
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

from app.constrain.constraint import Constraint, ResponseFormat, validate_json
from app.constrain.retry import MAX_RETRIES, MAX_RETRIES_IN_ALL, backup, retriable
from app.domain.budget import Overflow
from app.domain.events import (
    FinishReason,
    GenerationDone,
    GenerationEvent,
    JsonChecked,
    JsonRetried,
    MessageDone,
    ParseEvent,
    PromptRendered,
    TokenScored,
    TokenStep,
    TurnFailed,
)
from app.domain.images import ImagePixels
from app.domain.messages import Conversation, DeveloperContent, Message, Role
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.sampling import Sampling
from app.domain.visibility import Lane, is_tool_recipient
from app.engine.backend import ModelBackend
from app.engine.local.pictures import pictures_of
from app.engine.local.tokenizer import ModelTokenizer
from app.engine.overflow import Fitted, PromptIds, fit, model_measure
from app.engine.protocol import Keep
from app.engine.request import GenerationRequest
from app.engine.session import (
    Capabilities,
    ChatEvent,
    Generation,
    TurnRecord,
    local_capabilities,
)
from app.errors import ContextError, ErrorCode, InvalidInputError
from app.kvcache import prompt_tag
from app.templates.base import GrammarRequest, OutputParser, Template
from app.templates.calls.format import declared_names


def _is_call(event: ParseEvent) -> bool:
    """A tool call the parser read whole: the generation handed over to tools."""
    return isinstance(event, MessageDone) and event.lane is Lane.TOOL_CALL and event.complete


class ChatSession:
    """One conversation with the model loaded in `client`."""

    def __init__(
        self,
        client: ModelBackend,
        template: Template,
        *,
        sampling: Sampling | None = None,
        max_tokens: int = 1024,
        today: dt.date | None = None,
        thinking_budget: int | None = None,
        response_format: ResponseFormat | None = None,
        tokenizer: ModelTokenizer | None = None,
    ) -> None:
        self.client = client
        self.template = template
        self.tokenizer = tokenizer or ModelTokenizer(client)  # shared: it caches the vocabulary
        template.check_model(self.tokenizer)
        self.sampling = sampling or template.defaults.sampling()
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget  # tokens per analysis message under a constraint
        self.response_format = response_format  # JSON mode for the whole conversation
        self.turns: list[TurnRecord] = []
        self._ids = PromptIds(template, self.tokenizer)
        if client.info is not None and client.info.image_tokens:
            self._ids.image_guess = client.info.image_tokens
        self.conversation = Conversation(messages=template.first_messages(today or dt.date.today()))

    @property
    def capabilities(self) -> Capabilities:
        return local_capabilities(self.template, self.client.info)

    def token_table(self) -> Sequence[bytes]:
        return self.tokenizer.token_table()

    def generate(
        self,
        conversation: Conversation,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
    ) -> Generator[ChatEvent, None, Generation]:
        """One generation for `conversation` as `request` asks (see the module guarantees).

        `request.prefix` continues a cut-off generation: its token ids (what the model had
        produced) follow the prompt, the parser reads them silently, the constraint reads them
        first, and the new tokens carry on from there; the returned messages include the
        continued ones whole."""
        conversation = self._asked(conversation, request)
        refused = self._sees(conversation)
        if refused:
            yield TurnFailed(refused, ErrorCode.INPUT_INVALID)
            return Generation([], None, refused, False, None, conversation=conversation)
        if request.tools is None:
            request = dataclasses.replace(request, tools=self._declared(conversation))
        constraint = self._constraint(request)
        budget = request.max_tokens or self.max_tokens
        out = yield from self._one(conversation, request, constraint, budget, cancel)
        if constraint is not None:
            out = yield from self._checked(conversation, request, constraint, out, budget, cancel)
        out.conversation = conversation
        return out

    def _keep(self, request: GenerationRequest) -> Keep:
        """Whose KV state `request` leaves: its conversation's, else its tenant's prompt cache."""
        tag = request.keep or prompt_tag(request.tenant)
        return Keep(tag, self.template.name, request.tenant)

    def complete(
        self, prompt: str, request: GenerationRequest, cancel: threading.Event | None = None
    ) -> Iterator[str | GenerationDone | TurnFailed]:
        """A raw prompt continued: the client's own text tokenized as it is (control tokens it
        spells are control tokens: a raw prompt is the client's to shape), the new text as it
        decodes, then how it ended; `ContextError` for a prompt the context cannot hold."""
        ids = [*self.tokenizer.bos_ids, *self.tokenizer.tokenize(prompt, special=True)]
        if len(ids) >= self.n_ctx:
            said = f"the prompt is {len(ids)} tokens; the context holds {self.n_ctx}"
            raise ContextError(said, "prompt")
        table = self.tokenizer.token_table()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for event in self.client.generate(
            ids,
            stop_ids=self.template.stop_ids(self.tokenizer),
            sampling=request.sampling.over(self.sampling) or self.sampling,
            max_tokens=min(request.max_tokens or self.max_tokens, self.n_ctx - len(ids)),
            cancel=cancel,
            keep=self._keep(request),
        ):
            if isinstance(event, TokenStep):
                yield decoder.decode(table[event.token] if event.token < len(table) else b"")
            elif not isinstance(event, PromptRead | ImageEncoding):  # (a raw completion: none)
                yield event

    def prompt_size(self, conversation: Conversation) -> int:
        """The tokens of `conversation`'s prompt, as the template renders it."""
        return len(self.template.prompt_ids(conversation, self.tokenizer))

    def _asked(self, conversation: Conversation, request: GenerationRequest) -> Conversation:
        """`conversation` recording the request's effort and announcing its JSON mode."""
        if request.effort is not None:
            conversation = self.template.with_effort(conversation, request.effort)
        response_format = request.response_format or self.response_format
        if response_format is not None:
            conversation = self.template.announce_format(conversation, response_format)
        return conversation

    def _declared(self, conversation: Conversation) -> dict[str, dict[str, Any] | None]:
        """The functions `conversation` declares, where the template can call them."""
        return _function_tools(conversation) if self.template.tool_calls else {}

    def _one(
        self,
        conversation: Conversation,
        request: GenerationRequest,
        constraint: Constraint | None,
        budget: int,
        cancel: threading.Event | None,
    ) -> Generator[ChatEvent, None, Generation]:
        """One pass of the model: fitted, rendered, generated and parsed."""
        fitted = self.fit(conversation, request.overflow, budget)
        yield fitted.event
        prefix = constraint.consumed if constraint is not None else request.prefix
        prompt = [*self._ids(fitted.conversation), *prefix]
        try:
            images = pictures_of(fitted.conversation, prompt)
        except InvalidInputError as exc:
            yield TurnFailed(exc.message, exc.code)
            return Generation([], None, exc.message, False, None)
        yield PromptRendered(tuple(prompt))
        parser = self.template.output_parser(self.tokenizer, declared_names(fitted.conversation))
        out = Generation([], None, None, False, None, list(prefix))
        for token in prefix:  # read silently, but a call it held whole is still a call
            out.called = any(_is_call(e) for e in parser.feed(token)) or out.called
        for event in self._generate(prompt, request, constraint, budget, cancel, images):
            yield from self._read(event, out, parser, images)
        out.messages = parser.messages
        return out

    def _generate(
        self,
        prompt: list[int],
        request: GenerationRequest,
        constraint: Constraint | None,
        budget: int,
        cancel: threading.Event | None,
        images: list[ImagePixels],
    ) -> Iterator[GenerationEvent]:
        """The worker's events for `prompt`, with the request's sampling and options."""
        return self.client.generate(
            prompt,
            stop_ids=self.template.stop_ids(self.tokenizer),
            sampling=request.sampling.over(self.sampling),
            max_tokens=budget,
            cancel=cancel,
            constraint=constraint,
            **({"top_logprobs": request.top_logprobs} if request.top_logprobs else {}),
            keep=self._keep(request),
            **({"reserved": True} if request.reserved else {}),
            **({"images": images} if images else {}),
        )

    def _read(
        self,
        event: GenerationEvent,
        out: Generation,
        parser: OutputParser,
        images: list[ImagePixels],
    ) -> Iterator[ChatEvent]:
        """One worker event parsed into chat events, its tokens and ending recorded in `out`."""
        if isinstance(event, PromptRead | ImageEncoding):
            yield event  # how far the prompt is read (the window and terminal show it)
            return
        if isinstance(event, TokenStep):
            out.tokens.append(event.token)
            if event.logprob is not None:
                yield TokenScored(event.token, event.logprob, event.top, event.t_ms)
            for parsed in parser.feed(event.token):
                out.called = out.called or _is_call(parsed)
                yield parsed
            return
        if isinstance(event, GenerationDone):
            out.timings, out.stop_id = event.timings, event.stop_id
            counts = zip(images, event.timings.image_tokens, strict=False)
            self._ids.image_tokens.update((i.sha256, n) for i, n in counts)
            out.finished = event.reason is FinishReason.STOP
            reason = "" if event.reason.value == "stop" else event.reason.value
            for parsed in parser.finish(reason):
                out.called = out.called or _is_call(parsed)
                yield parsed
        else:
            out.failed = event.reason
            yield from parser.finish(event.reason)
        yield event

    def _sees(self, conversation: Conversation) -> str:
        """Why the model cannot take `conversation`'s images ("" when it can, or has none)."""
        if not any(m.images for m in conversation.messages) or self.capabilities.images:
            return ""
        return (
            f"{self.name} reads text only, and the conversation has images: choose a model that"
            " sees images (one with its projector, an mmproj file), or start a new chat"
        )

    @property
    def name(self) -> str:
        """The model's file name ("this model" while the backend does not say)."""
        info = self.client.info
        return info.path.rsplit("/", 1)[-1] if info is not None else "this model"

    def fit(
        self, conversation: Conversation, overflow: Overflow = Overflow.STOP, reserve: int = 0
    ) -> Fitted:
        """`conversation` fitted to the context under `overflow` (`app/engine/overflow.py`),
        with the answer's reserve (`reserve`, else the session's `max_tokens`)."""
        measure = model_measure(self._ids, self.n_ctx, reserve or self.max_tokens)
        return fit(conversation, measure, overflow)

    @property
    def n_ctx(self) -> int:
        """The context the model was loaded with (4,096 when the backend does not say)."""
        info = self.client.info
        return (info.n_ctx if info is not None else 0) or 4096

    def count(self, text: str) -> int:
        """How many tokens `text` is for this model (as text: control tokens it spells too)."""
        return len(self._words(text))

    def _words(self, text: str) -> list[int]:
        """`text` as this model's token ids (as text, never control tokens)."""
        return self.tokenizer.tokenize(text, special=False)

    def room(self, text: str, conversation: Conversation | None = None) -> int:
        """The tokens left in the context for more of a user message `text` to carry, after
        `conversation` (None: the session's own), the message itself and the answer's reserve
        (`max_tokens`)."""
        asked = (conversation or self.conversation).with_message(Message.of(Role.USER, text))
        used = len(self.template.prompt_ids(asked, self.tokenizer))
        return max(0, self.n_ctx - used - self.max_tokens)

    def _constraint(self, request: GenerationRequest) -> Constraint | None:
        """The one grammar `request` makes with this model's template (None: unconstrained);
        `SchemaError` for a schema or tool the mask cannot take."""
        grammar = GrammarRequest(
            schema=request.schema if request.response_format else self._schema(),
            tools=request.tools or {},
            calls=request.calls,
            tool_choice=request.tool_choice,
            thinking_budget=request.thinking_budget or self.thinking_budget,
            max_tokens=request.max_tokens or self.max_tokens,
            control=self.template.control_markers(self.tokenizer),
        )
        constraint = self.template.grammar(grammar)
        if constraint is None or not request.prefix:
            return constraint
        return dataclasses.replace(constraint, consumed=request.prefix)

    def _schema(self) -> dict[str, Any] | None:
        """The schema of the session's own JSON mode (None: none)."""
        return self.response_format.json_schema_dict if self.response_format else None

    def _checked(
        self,
        conversation: Conversation,
        request: GenerationRequest,
        constraint: Constraint,
        out: Generation,
        budget: int,
        cancel: threading.Event | None,
    ) -> Generator[ChatEvent, None, Generation]:
        """The verdicts on a generation, after retrying an answer that broke its schema."""
        schema = request.schema if request.response_format else self._schema()
        tools = dict(request.tools or {})
        banned: dict[int, tuple[int, ...]] = {}  # at a point of the generation: excluded ids
        tries: collections.Counter[tuple[str, str]] = collections.Counter()  # per violation
        for attempt in range(1, MAX_RETRIES_IN_ALL + 2):
            verdicts = list(json_checks(out.messages, schema, tools, out.finished))
            broken = next(
                (v for v in verdicts if v.target == "answer" and retriable(v.result)), None
            )
            answer = next((m for m in reversed(out.messages) if m.channel == "final"), None)
            if broken is None or answer is None or attempt > MAX_RETRIES_IN_ALL or out.failed:
                break
            r = broken.result
            tries[(r.path, r.keyword)] += 1
            if tries[(r.path, r.keyword)] > MAX_RETRIES:
                break
            last = tries[(r.path, r.keyword)] == MAX_RETRIES  # the value could not be repaired
            table, words = self.tokenizer.token_table(), self._words
            found = backup(out.tokens, table, answer.text, r, last, words)
            left = budget - len(found.prefix) + len(constraint.consumed) if found else 0
            if found is None or left <= 0:
                break
            yield JsonRetried("answer", r.path, r.keyword, attempt, found.kept)
            point = len(found.prefix)
            banned[point] = (*banned.get(point, ()), *found.banned)
            retry = dataclasses.replace(constraint, consumed=found.prefix, banned=banned[point])
            out = yield from self._one(conversation, request, retry, left, cancel)
        yield from verdicts
        return out


def json_checks(
    messages: Sequence[Message],
    schema: dict[str, Any] | None,
    tools: Mapping[str, Mapping[str, Any] | None],
    complete: bool,
) -> Iterator[JsonChecked]:
    """The verdict on each tool call's arguments (against its function's parameters) and on
    a JSON answer (against `schema`); a cut-off one is E-STREAM-TRUNCATED, never valid."""
    for m in messages:
        if is_tool_recipient(m.recipient) and m.recipient:
            name = m.recipient.removeprefix("functions.")
            yield JsonChecked(name, validate_json(m.text, tools.get(name), complete=complete))
        elif m.channel == "final" and schema is not None:
            yield JsonChecked("answer", validate_json(m.text, schema, complete=complete))


def _function_tools(conversation: Conversation) -> dict[str, dict[str, Any] | None]:
    """`{name: parameters}` of the functions the developer message declares."""
    for m in conversation.messages:
        for c in m.content:
            if isinstance(c, DeveloperContent) and c.tools and "functions" in c.tools:
                return {t.name: t.parameters for t in c.tools["functions"].tools}
    return {}
