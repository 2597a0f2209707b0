"""The `harmony` template: gpt-oss prompts rendered by our Harmony codec, fed as ids.

Guarantees: the prompt is our renderer's ids (never text through llama.cpp's tokenizer); the
stop ids are `<|return|>`, `<|call|>` and `<|endoftext|>`, never `<|end|>`; a model whose
vocabulary disagrees with o200k_harmony (size or special tokens) is refused before use.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from app.constrain.constraint import Constraint, ResponseFormat
from app.domain.instructions import gathered
from app.domain.messages import (
    Conversation,
    Message,
    ReasoningEffort,
    ResponseFormatSpec,
    Role,
    SystemContent,
)
from app.errors import LoadProblem, ModelLoadError
from app.harmony import encoding as enc
from app.harmony.parser import StreamParser
from app.harmony.renderer import Renderer, RenderMode
from app.templates.base import GrammarRequest, OutputParser, Template, TemplateDefaults, Tokenizer
from app.templates.harmony_grammar import harmony_constraint

_CHECKED_SPECIALS = (
    enc.RETURN,
    enc.CONSTRAIN,
    enc.CHANNEL,
    enc.START,
    enc.END,
    enc.MESSAGE,
    enc.CALL,
)


def with_effort(conversation: Conversation, effort: ReasoningEffort) -> Conversation:
    """The conversation with its system message asking for `effort` (one is added if absent)."""
    return conversation.with_header(Role.SYSTEM, reasoning_effort=effort)


def with_response_format(
    conversation: Conversation, response_format: ResponseFormat
) -> Conversation:
    """The conversation whose developer message announces `response_format` (one is added)."""
    spec_source = response_format.json_schema
    spec = ResponseFormatSpec(
        name=spec_source.name if spec_source else "response",
        description=spec_source.description if spec_source else None,
        schema=response_format.json_schema_dict or {"type": "object"},
    )
    return conversation.with_header(Role.DEVELOPER, response_formats=(spec,))


class HarmonyTemplate(Template):
    name = "harmony"
    tool_calls = "harmony"
    defaults = TemplateDefaults(
        session_len=8192, temperature=1.0, top_p=1.0, top_k=0, repetition_penalty=1.0
    )

    takes_effort = True

    def __init__(self) -> None:
        self._renderer = Renderer()

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        conversation = gathered(conversation)  # Harmony's instructions come first, all of them
        if reasoning_effort is not None:
            conversation = with_effort(conversation, reasoning_effort)
        return self._renderer.render(conversation, RenderMode.COMPLETION)

    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        return [enc.RETURN, enc.CALL, enc.END_OF_TEXT]

    def output_parser(self, tokenizer: Tokenizer, tools: Collection[str] = ()) -> OutputParser:
        return StreamParser(self._renderer.encoding)

    def first_messages(self, today: dt.date) -> tuple[Message, ...]:
        """The system message with the date pinned, so the prompt prefix stays put."""
        date = today.isoformat()
        return (Message.of(Role.SYSTEM, SystemContent(conversation_start_date=date)),)

    def with_effort(self, conversation: Conversation, effort: ReasoningEffort) -> Conversation:
        return with_effort(conversation, effort)

    def announce_format(
        self, conversation: Conversation, response_format: ResponseFormat
    ) -> Conversation:
        if response_format.json_schema_dict is None:
            return conversation
        return with_response_format(conversation, response_format)

    def grammar(self, request: GrammarRequest) -> Constraint | None:
        """Free reasoning, then a constrained answer or call (`harmony_grammar`); None when
        neither an answer's schema nor a tool is declared."""
        if request.schema is None and not request.tools and not request.calls:
            return None
        return harmony_constraint(
            request.schema,
            tools=request.tools,
            tool_choice=request.tool_choice,
            thinking_budget=request.thinking_budget,
            calls=request.calls,
            max_tokens=request.max_tokens,
        )

    def check_model(self, tokenizer: Tokenizer) -> None:
        if tokenizer.n_vocab != enc.N_VOCAB:
            raise ModelLoadError(
                LoadProblem.INCOMPATIBLE_VOCABULARY,
                "the model",
                f"its vocabulary has {tokenizer.n_vocab} tokens,"
                f" not the {enc.N_VOCAB} of o200k_harmony",
            )
        ours = self._renderer.encoding
        theirs = tokenizer.special_bytes(list(_CHECKED_SPECIALS))
        for token, piece in zip(_CHECKED_SPECIALS, theirs, strict=True):
            if piece != ours.token_bytes(token):
                raise ModelLoadError(
                    LoadProblem.INCOMPATIBLE_VOCABULARY,
                    "the model",
                    f"its token {token} is {piece!r},"
                    f" not {ours.token_bytes(token)!r} as in o200k_harmony",
                )
