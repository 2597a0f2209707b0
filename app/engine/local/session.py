"""A chat with one loaded model: render → generate → parse, turn after turn.

Guarantees: the same typed events for every template (Harmony's parser, or the text parser
with `<think>` routing); the partial output of a failed or cancelled turn is kept in the
conversation; the reasoning effort chosen for a message is recorded with its turn; a
follow-up turn shares the KV cache with the previous one for the unchanged prefix (its
timings say how much was reused). With a `response_format` (JSON mode) or declared function
tools, the worker enforces the grammar, and every JSON answer or tool call is checked with
`jsonschema` afterwards (`JsonChecked`): a cut-off answer is E-STREAM-TRUNCATED, never valid;
an answer that breaks a keyword the grammar could not enforce is generated again from before
the offending value, that value's earlier choices excluded — and the last retry for a
violation from before the offending member itself, so that the answer may leave it out
(`JsonRetried`, at most `MAX_RETRIES` times for one violation and `MAX_RETRIES_IN_ALL` for
the answer, within the same `max_tokens`); the last attempt's verdict is reported. Each
generation's conversation is first fitted to the context under the session's `overflow` policy
(`app/engine/overflow.py`): its `ContextFit` says the budget and what was left out or cut.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

from app.constrain.constraint import (
    CallSpec,
    Constraint,
    ResponseFormat,
    ToolChoice,
    validate_json,
)
from app.constrain.retry import MAX_RETRIES, MAX_RETRIES_IN_ALL, backup, retriable
from app.domain.budget import Overflow
from app.domain.events import (
    FinishReason,
    GenerationDone,
    JsonChecked,
    JsonRetried,
    MessageDone,
    ParseEvent,
    PromptRendered,
    TokenScored,
    TokenStep,
    TurnFailed,
)
from app.domain.messages import (
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    user_message,
)
from app.domain.sampling import Sampling
from app.domain.visibility import Lane, is_tool_recipient
from app.engine.local.pictures import pictures_of
from app.engine.local.tokenizer import ModelTokenizer
from app.engine.overflow import Fitted, PromptIds, fit, model_measure
from app.engine.protocol import Keep, ModelBackend
from app.engine.session import Capabilities, ChatEvent, Generation, TurnRecord
from app.errors import ErrorCode, InvalidInputError
from app.templates.base import GrammarRequest, Template

_LOCAL = Capabilities(
    local_grammar=True, continues_prefix=True, server_tool_choice=False, vocabulary=True
)


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
        self.top_logprobs = 0  # > 0: each token comes scored (`TokenScored`, the debug pane)
        self.response_format = response_format  # JSON mode for the whole conversation
        self.overflow = Overflow.STOP  # what a prompt that outgrows the context does
        self.conversation_id = ""  # set: its KV state is kept as a snapshot and looked for first
        self.reserved = False  # the window's own turn: on the worker's reserved sequence
        self.turns: list[TurnRecord] = []
        self._ids = PromptIds(template, self.tokenizer)
        if client.info is not None and client.info.image_tokens:
            self._ids.image_guess = client.info.image_tokens
        self._fitted: tuple[Conversation, Overflow, int, Fitted] | None = None
        self.conversation = Conversation(messages=template.first_messages(today or dt.date.today()))

    @property
    def capabilities(self) -> Capabilities:
        placement = self.client.info.placement if self.client.info is not None else None
        return dataclasses.replace(
            _LOCAL,
            tools=self.template.tool_calls is not None,
            effort=self.template.takes_effort,
            snapshots=placement is not None and not placement.sliding_window,  # (kv_snapshots.py)
            images=self.client.info is not None and bool(self.client.info.projector),
        )

    def with_effort(self, conversation: Conversation, effort: ReasoningEffort) -> Conversation:
        return self.template.with_effort(conversation, effort)

    def tool_constraint(
        self,
        tools: Mapping[str, Mapping[str, Any] | None],
        calls: Sequence[CallSpec],
        tool_choice: ToolChoice,
    ) -> Constraint | None:
        request = GrammarRequest(
            tools=tools,
            calls=tuple(calls),
            tool_choice=tool_choice,
            thinking_budget=self.thinking_budget,
            control=self.template.control_markers(self.tokenizer),
        )
        return self.template.grammar(request)

    def token_table(self) -> Sequence[bytes]:
        return self.tokenizer.token_table()

    def send(
        self,
        text: str | Message,
        *,
        reasoning_effort: ReasoningEffort | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        response_format: ResponseFormat | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[ChatEvent]:
        """Send a user message and stream the reply's events (JSON mode with `response_format`)."""
        conversation = self.conversation.with_message(user_message(text))
        if reasoning_effort is not None:
            conversation = self.template.with_effort(conversation, reasoning_effort)
        response_format = response_format or self.response_format  # per message wins
        schema = response_format.json_schema_dict if response_format else None
        if response_format is not None:
            conversation = self.template.announce_format(conversation, response_format)
        self.conversation = conversation
        constraint = self._constraint(schema, tool_choice, max_tokens or self.max_tokens)
        user_index = len(conversation.messages) - 1
        out = yield from self.generate(
            conversation, constraint=constraint, max_tokens=max_tokens, cancel=cancel
        )
        if constraint is not None:
            budget = max_tokens or self.max_tokens
            out = yield from self._checked(conversation, constraint, out, schema, budget, cancel)
        self.conversation = conversation.with_messages(out.messages)
        self.turns.append(TurnRecord(user_index, reasoning_effort, out.timings, out.failed))

    def generate(
        self,
        conversation: Conversation,
        *,
        constraint: Constraint | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        prefix: Sequence[int] = (),
        tool_choice: ToolChoice = "auto",
    ) -> Generator[ChatEvent, None, Generation]:
        """One generation for `conversation` (events streamed; the parsed result returned).
        `tool_choice` is the constraint's to hold here (`tool_constraint`); it is not read.

        `prefix` continues a cut-off generation: its token ids (what the model had produced)
        follow the prompt, the parser reads them silently, and the new tokens carry on from
        there; the returned messages include the continued ones whole."""
        refused = self._sees(conversation)
        if refused:
            yield TurnFailed(refused, ErrorCode.INPUT_INVALID)
            return Generation([], None, refused, False, None)
        fitted = self.fit(conversation, max_tokens)
        yield fitted.event
        prompt = [*self._ids(fitted.conversation), *prefix]
        try:
            images = pictures_of(fitted.conversation, prompt)
        except InvalidInputError as exc:
            yield TurnFailed(exc.message, exc.code)
            return Generation([], None, exc.message, False, None)
        yield PromptRendered(tuple(prompt))
        parser = self.template.output_parser(self.tokenizer)
        for token in prefix:
            for _ in parser.feed(token):
                pass
        out = Generation([], None, None, False, None, list(prefix))
        for event in self.client.generate(
            prompt,
            stop_ids=self.template.stop_ids(self.tokenizer),
            sampling=self.sampling,
            max_tokens=max_tokens or self.max_tokens,
            cancel=cancel,
            constraint=constraint,
            **({"top_logprobs": self.top_logprobs} if self.top_logprobs else {}),
            **({"keep": self._keep()} if self.conversation_id else {}),
            **({"reserved": True} if self.reserved else {}),
            **({"images": images} if images else {}),
        ):
            if isinstance(event, TokenStep):
                out.tokens.append(event.token)
                if event.logprob is not None:
                    yield TokenScored(event.token, event.logprob, event.top, event.t_ms)
                for parsed in parser.feed(event.token):
                    out.called = out.called or _is_call(parsed)
                    yield parsed
                continue
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
        out.messages = parser.messages
        return out

    def _sees(self, conversation: Conversation) -> str:
        """Why the model cannot take `conversation`'s images ("" when it can, or has none)."""
        if not any(m.images for m in conversation.messages):
            return ""
        info = self.client.info
        if info is not None and info.projector:
            return ""
        name = info.path.rsplit("/", 1)[-1] if info is not None else "this model"
        return (
            f"{name} reads text only, and the conversation has images: choose a model that"
            " sees images (one with its projector, an mmproj file), or start a new chat"
        )

    def _keep(self) -> Keep:
        """Whose KV snapshots a generation keeps and looks for: this conversation's, under
        its template."""
        return Keep(self.conversation_id, self.template.name)

    def resume(
        self,
        conversation: Conversation,
        prefix: Sequence[int],
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        response_format: ResponseFormat | None = None,
    ) -> Generator[ChatEvent, None, Generation]:
        """Continue a cut generation from its token ids `prefix`, under the same JSON mode as
        `send` (the constraint reads the prefix first) and with the same validity check."""
        response_format = response_format or self.response_format
        schema = response_format.json_schema_dict if response_format else None
        if response_format is not None:
            conversation = self.template.announce_format(conversation, response_format)
        self.conversation = conversation
        constraint = self._constraint(schema, "auto")
        if constraint is not None:
            constraint = dataclasses.replace(constraint, consumed=tuple(prefix))
        out = yield from self.generate(
            conversation, constraint=constraint, max_tokens=max_tokens, cancel=cancel, prefix=prefix
        )
        if constraint is not None:
            budget = max_tokens or self.max_tokens
            out = yield from self._checked(conversation, constraint, out, schema, budget, cancel)
        return out

    def fit(self, conversation: Conversation, max_tokens: int | None = None) -> Fitted:
        """`conversation` fitted to the context under `overflow` (`app/engine/overflow.py`),
        with the answer's reserve from `max_tokens`; a generation of the conversation the last
        fit returned (whatever its `max_tokens`) sends it as it was measured, with the same
        event."""
        budget = max_tokens or self.max_tokens
        last = self._fitted
        if last is not None and last[1] is self.overflow:
            source, _, reserve, done = last
            if conversation is done.conversation or (conversation is source and budget == reserve):
                return done
        fitted = fit(conversation, model_measure(self._ids, self.n_ctx, budget), self.overflow)
        self._fitted = (conversation, self.overflow, budget, fitted)
        return fitted

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

    def room(self, text: str) -> int:
        """The tokens left in the context for more of a user message `text` to carry, after the
        conversation so far, the message itself and the answer's reserve (`max_tokens`)."""
        asked = self.conversation.with_message(Message.of(Role.USER, text))
        used = len(self.template.prompt_ids(asked, self.tokenizer))
        return max(0, self.n_ctx - used - self.max_tokens)

    def _constraint(
        self, schema: dict[str, Any] | None, tool_choice: ToolChoice, budget: int | None = None
    ) -> Constraint | None:
        request = GrammarRequest(
            schema=schema,
            tools=_function_tools(self.conversation) if self.template.tool_calls else {},
            tool_choice=tool_choice,
            thinking_budget=self.thinking_budget,
            max_tokens=budget,
        )
        return self.template.grammar(request)

    def _checked(
        self,
        conversation: Conversation,
        constraint: Constraint,
        out: Generation,
        schema: dict[str, Any] | None,
        budget: int,
        cancel: threading.Event | None,
    ) -> Generator[ChatEvent, None, Generation]:
        """The verdicts on a generation, after retrying an answer that broke its schema."""
        tools = _function_tools(self.conversation)
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
            out = yield from self.generate(
                conversation, constraint=retry, max_tokens=left, cancel=cancel, prefix=found.prefix
            )
        yield from verdicts
        return out


def json_checks(
    messages: Sequence[Message],
    schema: dict[str, Any] | None,
    tools: dict[str, dict[str, Any] | None],
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
