"""The built-in templates for plain-text chat models: chatml, smollm2, qwen, gemma, llama-3,
completion.

Markers are tokenized with special-token parsing, message text without it; each template
carries the sampling defaults its model family recommends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app.domain.messages import Conversation, ReasoningEffort, Role
from app.templates.base import (
    Capability,
    OutputParser,
    Template,
    TemplateDefaults,
    Tokenizer,
    turn_text,
)
from app.templates.text_output import TextOutputParser


def stop_ids_of(tokenizer: Tokenizer, words: Iterable[str]) -> list[int]:
    """The ids that end a generation: each stop word that is one token in the model's
    vocabulary, and its end-of-sequence id."""
    ids = {found[0] for w in words if len(found := tokenizer.tokenize(w, special=True)) == 1}
    eos = tokenizer.eos_id
    return sorted(ids | ({eos} if eos >= 0 else set()))


class _Marked(Template):
    """A template of `head(role) + text + tail` turns and a generation prompt."""

    bos = ""
    stop_markers: tuple[str, ...] = ()

    def head(self, role: str) -> str:
        raise NotImplementedError

    tail = ""

    def turns(self, conversation: Conversation) -> Iterator[tuple[str, str]]:
        """(role, text) of each turn; the conversation's instructions are a system turn."""
        for m in conversation.messages:
            role = m.author.role
            if role is not Role.TOOL and m.channel in (None, "final"):
                yield ("system" if role is Role.DEVELOPER else role.value), turn_text(m)

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        out = tokenizer.tokenize(self.bos, special=True) if self.bos else []
        for role, text in self.turns(conversation):
            out += tokenizer.tokenize(self.head(role), special=True)
            out += tokenizer.tokenize(text, special=False)
            out += tokenizer.tokenize(self.tail, special=True)
        return out + tokenizer.tokenize(self.head("assistant"), special=True)

    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        return stop_ids_of(tokenizer, self.stop_markers)

    def output_parser(self, tokenizer: Tokenizer) -> OutputParser:
        return TextOutputParser(tokenizer.token_table(), self.stop_ids(tokenizer))


class ChatML(_Marked):
    name = "chatml"
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
    defaults = TemplateDefaults(
        session_len=8192, temperature=1.0, top_p=0.95, top_k=64, stop_words=("<end_of_turn>",)
    )
    bos = "<bos>"
    stop_markers = ("<end_of_turn>", "<eos>")
    tail = "<end_of_turn>\n"

    def head(self, role: str) -> str:
        return f"<start_of_turn>{'model' if role == 'assistant' else 'user'}\n"

    def turns(self, conversation: Conversation) -> Iterator[tuple[str, str]]:
        system = ""
        for role, text in super().turns(conversation):
            if role in (
                "system",
                "developer",
            ):  # Gemma has no system turn: it leads the next user turn
                system += text + "\n\n"
                continue
            yield role, (system + text if role == "user" else text)
            system = "" if role == "user" else system


class Llama3(_Marked):
    name = "llama-3"
    defaults = TemplateDefaults(
        session_len=8192, temperature=0.6, top_p=0.9, top_k=40, stop_words=("<|eot_id|>",)
    )
    bos = "<|begin_of_text|>"
    stop_markers = ("<|eot_id|>", "<|end_of_text|>")
    tail = "<|eot_id|>"

    def head(self, role: str) -> str:
        return f"<|start_header_id|>{role}<|end_header_id|>\n\n"


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
