"""The built-in templates for plain-text chat models: chatml, smollm2, qwen, gemma, llama-3,
completion (more families in `families.py`).

Markers are tokenized with special-token parsing, message text without it; each template
carries the sampling defaults its model family recommends.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator

from app.domain.instructions import gathered, turn_text
from app.domain.messages import Conversation, ReasoningEffort, Role, ToolDescription
from app.templates.base import (
    Capability,
    OutputParser,
    Template,
    TemplateDefaults,
    Tokenizer,
)
from app.templates.calls.format import CallFormat, Piece
from app.templates.calls.llama3 import ENVIRONMENT, KNOWLEDGE
from app.templates.calls.turns import call_turns, in_system_turn
from app.templates.text_output import TextOutputParser


def stop_ids_of(tokenizer: Tokenizer, words: Iterable[str]) -> list[int]:
    """The ids that end a generation: each stop word that is one token in the model's
    vocabulary, and its end-of-sequence id."""
    ids = {found[0] for w in words if len(found := tokenizer.tokenize(w, special=True)) == 1}
    eos = tokenizer.eos_id
    return sorted(ids | ({eos} if eos >= 0 else set()))


class _Marked(Template):
    """A template of `head(role) + text + tail` turns and a generation prompt; with a call
    format, tools are declared where `declaration` puts them (the system turn unless a family
    says otherwise), an assistant's calls are written in its turn after its text, and results
    go back in the format's result turns."""

    bos = ""
    stop_markers: tuple[str, ...] = ()

    def head(self, role: str) -> str:
        raise NotImplementedError

    tail = ""

    def turns(self, conversation: Conversation) -> Iterator[tuple[str, str]]:
        """(role, text) of each turn; the conversation's instructions are a system turn."""
        for m in conversation.messages:
            role = m.author.role
            if role is not Role.TOOL and m.channel in (None, "final") and not m.recipient:
                yield ("system" if role is Role.DEVELOPER else role.value), turn_text(m)

    def pieces(self, conversation: Conversation) -> list[tuple[str, list[Piece]]]:
        """The turns as (role, pieces): `turns`, with the call format's declarations, calls
        and results where the conversation has them."""
        fmt = self.call_format()
        called = call_turns(fmt, conversation, self.declaration) if fmt is not None else None
        if called is None:
            return [(role, [Piece(text)]) for role, text in self.turns(conversation)]
        return called

    def declaration(
        self, fmt: CallFormat, tools: list[ToolDescription], instructions: str
    ) -> tuple[str, str]:
        """(the system turn's text, the text that leads the first user turn) of a conversation
        declaring `tools` with `instructions`: here the instructions then the declaration."""
        return in_system_turn(fmt, tools, instructions)

    def segments(self, conversation: Conversation) -> list[Piece]:
        """The whole prompt: markers as markup, message text as content."""
        out = [Piece(self.bos, True)] if self.bos else []
        for role, pieces in self.pieces(conversation):
            out += [Piece(self.head(role), True), *pieces, Piece(self.tail, True)]
        return [*out, Piece(self.head("assistant"), True)]

    def prompt_text(self, conversation: Conversation) -> str:
        """The prompt as text: what `prompt_ids` tokenizes, joined (golden tests hold this)."""
        return "".join(p.text for p in self.segments(conversation))

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        out: list[int] = []
        for piece in self.segments(conversation):
            if piece.text:
                out += tokenizer.tokenize(piece.text, special=piece.markup)
        return out

    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        return stop_ids_of(tokenizer, self.stop_markers)

    def output_parser(self, tokenizer: Tokenizer, tools: Collection[str] = ()) -> OutputParser:
        return TextOutputParser(
            tokenizer.token_table(),
            self.stop_ids(tokenizer),
            self.call_format(),
            {i: m for m, i in self.control_markers(tokenizer).items()},
            tools=tools,
        )


class ChatML(_Marked):
    name = "chatml"
    tool_calls = "hermes"
    defaults = TemplateDefaults(
        session_len=4096, temperature=0.7, top_p=0.9, top_k=40, stop_words=("<|im_end|>",)
    )
    stop_markers = ("<|im_end|>", "<|endoftext|>")
    tail = "<|im_end|>\n"

    def head(self, role: str) -> str:
        return f"<|im_start|>{role}\n"


class SmolLM2(ChatML):
    """ChatML with sampling that keeps a 135M model on topic: a low temperature and a
    repetition penalty. (Its model card's default system message is left out: with it, the
    Q4_1 model answered "What is the capital of France?" wrongly; without it, right.)"""

    name = "smollm2"
    defaults = TemplateDefaults(
        session_len=8192,
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        repetition_penalty=1.1,
        stop_words=("<|im_end|>",),
    )


class Qwen(ChatML):
    name = "qwen"
    thinks = True
    defaults = TemplateDefaults(
        session_len=8192,
        temperature=0.7,
        top_p=0.8,
        top_k=20,
        repetition_penalty=1.05,
        stop_words=("<|im_end|>",),
    )


class Gemma(_Marked):
    name = "gemma"
    tool_calls = "gemma"
    defaults = TemplateDefaults(
        session_len=8192, temperature=1.0, top_p=0.95, top_k=64, stop_words=("<end_of_turn>",)
    )
    bos = "<bos>"
    stop_markers = ("<end_of_turn>", "<eos>")
    tail = "<end_of_turn>\n"

    def head(self, role: str) -> str:
        return f"<start_of_turn>{'model' if role == 'assistant' else 'user'}\n"

    def pieces(self, conversation: Conversation) -> list[tuple[str, list[Piece]]]:
        """Gemma has no system turn: its text leads the first user turn, with instructions
        given later gathered there (their place may have no user turn after it)."""
        out: list[tuple[str, list[Piece]]] = []
        system: list[Piece] = []
        for role, pieces in super().pieces(gathered(conversation)):
            if role == "system":
                system += [*pieces, Piece("\n\n")]
                continue
            out.append((role, [*system, *pieces] if role == "user" else pieces))
            system = [] if role == "user" else system
        return out


class Llama3(_Marked):
    name = "llama-3"
    tool_calls = "llama3"
    defaults = TemplateDefaults(
        session_len=8192, temperature=0.6, top_p=0.9, top_k=40, stop_words=("<|eot_id|>",)
    )
    bos = "<|begin_of_text|>"
    stop_markers = ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>")
    tail = "<|eot_id|>"

    def head(self, role: str) -> str:
        return f"<|start_header_id|>{role}<|end_header_id|>\n\n"

    def declaration(
        self, fmt: CallFormat, tools: list[ToolDescription], instructions: str
    ) -> tuple[str, str]:
        """As Llama 3.1's template: the system turn names the ipython environment and the
        dates (its fixed "Today Date", so a prompt never changes with the day), the tools
        lead the first user message."""
        return ENVIRONMENT + KNOWLEDGE + instructions.strip(), fmt.declare(tools)


class Completion(_Marked):
    name = "completion"
    """A base model: the text so far, undecorated, to be continued."""

    defaults = TemplateDefaults(
        session_len=2048, temperature=0.8, top_p=0.95, top_k=40, capability=Capability.COMPLETION
    )

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        bos = tokenizer.bos_ids
        text = "".join(
            text for role, text in self.turns(conversation) if role in ("user", "assistant")
        )
        return list(bos) + tokenizer.tokenize(text, special=False)
