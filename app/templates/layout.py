"""Chat templates as LMDeploy writes them: a layout of markers around each turn, and the
generation settings that travel with it.

Guarantees:
- `LayoutSpec` is LMDeploy's `--chat-template` shape (`model_name`, `system`,
  `meta_instruction`, `eosys`, `user`, `eoh`, `assistant`, `eoa`, `separator`, `tool`,
  `eotool`, `capability`, `stop_words`) plus the sampling fields (`session_len`,
  `temperature`, `top_p`, `top_k`, `repetition_penalty`) and `base`, the template it extends;
  unknown fields and wrong types are refused (pydantic, `extra="forbid"`).
- A layout renders as LMDeploy's `BaseChatTemplate`: at the start of a sequence
  `{system}{meta_instruction}{eosys}` (unless the conversation brings its own instructions,
  which take that place), then `{user}…{eoh}` and `{assistant}…{eoa}{separator}` per turn, then
  `{assistant}`; a later turn of an interactive sequence is only
  `{separator}{user}…{eoh}{assistant}`. A `completion` layout is the text undecorated.
- Markers are tokenized with special-token parsing, turn text and the meta instruction never
  are: a user who types `<|User|>` or `<eoa>` writes text, not a turn.
- Stop words that are one token in the model's vocabulary (and its end-of-sequence id) end a
  generation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.domain.instructions import header_length, turn_text
from app.domain.messages import Conversation, ReasoningEffort, Role
from app.templates.base import (
    Capability,
    OutputParser,
    Template,
    TemplateDefaults,
    Tokenizer,
)
from app.templates.builtin import ChatML, Completion, Llama3, Qwen, SmolLM2, stop_ids_of
from app.templates.calls.format import Piece
from app.templates.calls.formats import FORMATS, call_format
from app.templates.calls.turns import call_turns
from app.templates.text_output import TextOutputParser

MARKERS = ("system", "eosys", "user", "eoh", "assistant", "eoa", "separator", "tool", "eotool")
SAMPLING = ("session_len", "temperature", "top_p", "top_k", "repetition_penalty")


class LayoutSpec(BaseModel):
    """A template file's fields (None: the base template's value, or empty)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    base: str | None = None
    system: str | None = None
    meta_instruction: str | None = None
    eosys: str | None = None
    user: str | None = None
    eoh: str | None = None
    assistant: str | None = None
    eoa: str | None = None
    separator: str | None = None
    tool: str | None = None
    eotool: str | None = None
    tool_calls: str | None = None  # the call format's name (`hermes`, `llama3`, …)
    capability: Capability | None = None
    stop_words: tuple[str, ...] | None = None
    session_len: int | None = Field(None, ge=16)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=0)
    repetition_penalty: float | None = Field(None, ge=0.5, le=2.0)

    def over(self, base: LayoutSpec) -> LayoutSpec:
        """This spec with every field it leaves out taken from `base`."""
        mine = self.model_dump(exclude_none=True)
        return base.model_copy(update={**mine, "base": base.model_name})

    @field_validator("tool_calls")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        if value is not None and call_format(value) is None:
            known = ", ".join(sorted(FORMATS))
            raise ValueError(f"no tool-call format is called {value!r}; known: {known}")
        return value

    def defaults(self) -> TemplateDefaults:
        """The generation settings that travel with the template."""
        given = {k: getattr(self, k) for k in SAMPLING if getattr(self, k) is not None}
        stops = self.stop_words or ()
        return TemplateDefaults(
            **given, stop_words=stops, capability=self.capability or Capability.CHAT
        )


class LayoutTemplate(Template):
    """A template rendered from a `LayoutSpec` (see the module guarantees)."""

    spec: ClassVar[LayoutSpec]

    def _marker(self, name: str) -> str:
        return str(getattr(self.spec, name) or "")

    def layout(self) -> dict[str, Any] | None:
        found: dict[str, Any] = self.spec.model_dump(mode="json", exclude_none=True)
        return found

    def turns(self, conversation: Conversation) -> Iterator[tuple[str, str]]:
        for m in conversation.messages:
            if m.channel in (None, "final"):
                role = m.author.role
                yield ("system" if role is Role.DEVELOPER else role.value), turn_text(m)

    def pieces(
        self, conversation: Conversation, *, sequence_start: bool = True
    ) -> list[tuple[str, bool]]:
        """The prompt as (text, is a marker) pieces; a later turn of an interactive sequence
        (`sequence_start` False) is only the last user message's."""
        m = self._marker
        turns = list(self.turns(conversation))
        last = next((text for role, text in reversed(turns) if role == "user"), "")
        if (self.spec.capability or Capability.CHAT) is Capability.COMPLETION:
            if not sequence_start:
                return [(last, False)]
            return [(text, False) for role, text in turns if role in ("user", "assistant")]
        if not sequence_start:
            return [
                (m("separator") + m("user"), True),
                (last, False),
                (m("eoh") + m("assistant"), True),
            ]
        fmt = self.call_format()
        meta = self.spec.meta_instruction
        opening = conversation.messages[: header_length(conversation)]
        if meta is not None and not any(turn_text(x) for x in opening):
            conversation = conversation.with_header(Role.DEVELOPER, instructions=meta)
        called = call_turns(fmt, conversation) if fmt is not None else None
        if called is not None:
            return self._with_calls(called)
        out: list[tuple[str, bool]] = []
        if meta is not None and not (turns and turns[0][0] == "system"):
            out += [(m("system"), True), (meta, False), (m("eosys"), True)]
        box = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
        end = {"system": "eosys", "user": "eoh", "tool": "eotool"}
        for role, text in turns:
            head = box.get(role, "user")
            tail = m(end[head]) if head in end else m("eoa") + m("separator")
            out += [(m(head), True), (text, False), (tail, True)]
        return [*out, (m("assistant"), True)]

    def _with_calls(self, turns: list[tuple[str, list[Piece]]]) -> list[tuple[str, bool]]:
        """The pieces of a conversation with tools (`call_turns`) in this layout's boxes."""
        m = self._marker
        box = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
        end = {"system": "eosys", "user": "eoh", "tool": "eotool"}
        out: list[tuple[str, bool]] = []
        for role, pieces in turns:
            head = box.get(role, "user")
            tail = m(end[head]) if head in end else m("eoa") + m("separator")
            out += [(m(head), True), *((p.text, p.markup) for p in pieces), (tail, True)]
        return [*out, (m("assistant"), True)]

    def prompt_text(self, conversation: Conversation, *, sequence_start: bool = True) -> str:
        """The prompt as text (the golden files hold this)."""
        return "".join(text for text, _ in self.pieces(conversation, sequence_start=sequence_start))

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        out = list(tokenizer.bos_ids)
        for text, marker in self.pieces(conversation):
            if text:
                out += tokenizer.tokenize(text, special=marker)
        return out

    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        return stop_ids_of(tokenizer, self.spec.stop_words or ())

    def output_parser(self, tokenizer: Tokenizer, tools: Collection[str] = ()) -> OutputParser:
        return TextOutputParser(
            tokenizer.token_table(),
            self.stop_ids(tokenizer),
            self.call_format(),
            {i: m for m, i in self.control_markers(tokenizer).items()},
            tools=tools,
        )


def layout_template(spec: LayoutSpec, **extra: Any) -> type[LayoutTemplate]:
    """A template class for a resolved spec (registered by its `model_name`)."""
    name = spec.model_name
    attrs = {
        "name": name,
        "spec": spec,
        "defaults": spec.defaults(),
        "tool_calls": spec.tool_calls,
        **extra,
    }
    return type(f"Layout[{name}]", (LayoutTemplate,), attrs)


INTERNLM_META = (
    "You are an AI assistant whose name is InternLM (书生·浦语).\n"
    "- InternLM (书生·浦语) is a conversational language model that is developed by Shanghai AI"
    " Laboratory (上海人工智能实验室). It is designed to be helpful, honest, and harmless.\n"
    "- InternLM (书生·浦语) can understand and communicate fluently in the language chosen by the"
    " user such as English and 中文.\n"
)


# The layouts of the built-in templates a file may extend (`"base": NAME`), and the InternLM
# family of LMDeploy's guide.
def _of(cls: type[Template], **markers: Any) -> LayoutSpec:
    """A built-in class's layout, with the sampling that class carries."""
    d = cls.defaults
    return LayoutSpec(
        model_name=cls.name,
        capability=d.capability,
        stop_words=d.stop_words,
        session_len=d.session_len,
        temperature=d.temperature,
        top_p=d.top_p,
        top_k=d.top_k,
        repetition_penalty=d.repetition_penalty,
        tool_calls=cls.tool_calls,
        **markers,
    )


_CHATML = {
    "system": "<|im_start|>system\n",
    "eosys": "<|im_end|>\n",
    "user": "<|im_start|>user\n",
    "eoh": "<|im_end|>\n",
    "assistant": "<|im_start|>assistant\n",
    "eoa": "<|im_end|>",
    "separator": "\n",
    "tool": "<|im_start|>tool\n",
    "eotool": "<|im_end|>\n",
}
_LLAMA3 = {
    "system": "<|start_header_id|>system<|end_header_id|>\n\n",
    "eosys": "<|eot_id|>",
    "user": "<|start_header_id|>user<|end_header_id|>\n\n",
    "eoh": "<|eot_id|>",
    "assistant": "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "eoa": "<|eot_id|>",
}
INTERNLM = LayoutSpec(  # LMDeploy's base model template: completion, 2048 tokens
    model_name="internlm",
    capability=Capability.COMPLETION,
    stop_words=(),
    session_len=2048,
    temperature=0.8,
    top_p=0.8,
    top_k=40,
    repetition_penalty=1.0,
)
INTERNLM_CHAT = INTERNLM.model_copy(
    update={
        "model_name": "internlm-chat",
        "system": "<|System|>:",
        "meta_instruction": INTERNLM_META,
        "eosys": "\n",
        "user": "<|User|>:",
        "eoh": "\n",
        "assistant": "<|Bot|>:",
        "eoa": "<eoa>",
        "separator": "\n",
        "capability": Capability.CHAT,
        "stop_words": ("<eoa>",),
    }
)
# What a file may extend (`"base": NAME`): the built-in layouts, by name.
BUILTIN_LAYOUTS: dict[str, LayoutSpec] = {
    "chatml": _of(ChatML, **_CHATML),
    "smollm2": _of(SmolLM2, **_CHATML),
    "qwen": _of(Qwen, **_CHATML),
    "llama-3": _of(Llama3, **_LLAMA3),
    "completion": _of(Completion),
    "internlm": INTERNLM,
    "internlm-20b": INTERNLM.model_copy(update={"model_name": "internlm-20b", "session_len": 4096}),
    "internlm-chat": INTERNLM_CHAT,
}
INTERNLM_TEMPLATES = tuple(
    layout_template(BUILTIN_LAYOUTS[n]) for n in ("internlm", "internlm-20b", "internlm-chat")
)

__all__ = [
    "BUILTIN_LAYOUTS",
    "INTERNLM_TEMPLATES",
    "LayoutSpec",
    "LayoutTemplate",
    "layout_template",
]
