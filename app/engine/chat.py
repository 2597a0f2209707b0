"""A chat with one loaded model: render → generate → parse, turn after turn.

Guarantees: the same typed events for every template (Harmony's parser, or the text parser
with `<think>` routing); the partial output of a failed or cancelled turn is kept in the
conversation; the reasoning effort chosen for a message is recorded with its turn; a
follow-up turn shares the KV cache with the previous one for the unchanged prefix (its
timings say how much was reused).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from app.domain.events import ParseEvent
from app.domain.messages import Conversation, Message, ReasoningEffort, Role, SystemContent
from app.engine.protocol import (
    GenerationDone,
    ModelBackend,
    Sampling,
    Timings,
    TokenStep,
    TurnFailed,
)
from app.engine.tokenizer import ModelTokenizer
from app.templates.base import Template
from app.templates.harmony import HarmonyTemplate, with_effort

ChatEvent = ParseEvent | GenerationDone | TurnFailed


@dataclass(frozen=True)
class TurnRecord:
    """What one turn was asked with and how it went."""

    user_index: int
    reasoning_effort: ReasoningEffort | None
    timings: Timings | None
    failed: str | None = None


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
    ) -> None:
        self.client = client
        self.template = template
        self.tokenizer = ModelTokenizer(client)
        template.check_model(self.tokenizer)
        self.sampling = sampling or template.defaults.sampling()
        self.max_tokens = max_tokens
        self.turns: list[TurnRecord] = []
        messages: tuple[Message, ...] = ()
        if isinstance(template, HarmonyTemplate):  # the date is pinned: the prompt prefix stays put
            date = (today or dt.date.today()).isoformat()
            messages = (Message.of(Role.SYSTEM, SystemContent(conversation_start_date=date)),)
        self.conversation = Conversation(messages=messages)

    def send(
        self,
        text: str,
        *,
        reasoning_effort: ReasoningEffort | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[ChatEvent]:
        """Send a user message and stream the reply's events."""
        conversation = self.conversation.with_message(Message.of(Role.USER, text))
        if reasoning_effort is not None and isinstance(self.template, HarmonyTemplate):
            conversation = with_effort(conversation, reasoning_effort)
        self.conversation = conversation
        user_index = len(conversation.messages) - 1
        prompt = self.template.prompt_ids(conversation, self.tokenizer)
        parser = self.template.output_parser(self.tokenizer)
        timings: Timings | None = None
        failed: str | None = None
        for event in self.client.generate(
            prompt,
            stop_ids=self.template.stop_ids(self.tokenizer),
            sampling=self.sampling,
            max_tokens=max_tokens or self.max_tokens,
            cancel=cancel,
        ):
            if isinstance(event, TokenStep):
                yield from parser.feed(event.token)
                continue
            if isinstance(event, GenerationDone):
                timings = event.timings
                yield from parser.finish("" if event.reason.value == "stop" else event.reason.value)
            else:
                failed = event.reason
                yield from parser.finish(event.reason)
            yield event
        self.conversation = self.conversation.with_messages(parser.messages)
        self.turns.append(TurnRecord(user_index, reasoning_effort, timings, failed))
