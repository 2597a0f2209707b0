"""The `gguf-jinja` template: the chat template stored in the GGUF, rendered in a sandbox.

Guarantees: the template runs in Jinja's immutable sandbox (`app/templates/jinja_render.py`:
no attribute tricks, no file or network access, bounded in time and size, HF's `tojson`).
Tools go to the template OpenAI-shaped (`tools`), an assistant's calls as `tool_calls`
(`{"type": "function", "function": {"name", "arguments": {…}}}`, ids `call_0001`, …) and
results as `tool` messages (`tool_call_id`, `name`), so the model sees its own markup. Message
text is tokenized without special-token parsing even though the template writes one string:
each message's content (a tool's result included) is rendered as a sentinel, the string is
split at the sentinels, and only the template's own text is tokenized with special parsing.
Instructions a client gives after the conversation began (`app/domain/instructions.py`) are
rendered where it gave them, as `system` messages, when the template renders them there with
every message's text intact; a template that refuses them, drops them or rewrites text gets
them gathered into the opening system message instead.
A call's arguments are written by the template itself, so a prompt holding calls, like one
whose template rewrites message text (the sentinels do not survive), is checked on the output:
it is refused with a clear error when a message spells a control token, or when the rendered
prompt holds control tokens that a rendering of neutral text does not, rather than risk an
injection. The call format (`tool_calls`, `call_format`, `output_parser`) is the one
`app/templates/calls/detect.py` finds for the source (cached per source); a template with
none takes no tools. Reasoning is read with the template's own markup
(`app/templates/reasoning_markup.py`: `reasoning`, `think_tags`) unless the call format names
think tags of its own; a prompt that ends inside a block starts the parser inside it, and the
control tokens within the markers are read as their text. The grammars take the same markup
(`think_block`): where the generation prompt opens a block (`opens_think`), a forced call first
closes it.

A template that is gpt-oss's own (`harmony_source`: it writes Harmony's `<|start|>`,
`<|channel|>`, `<|message|>` and `<|call|>` markers and addresses calls ` to=` `functions.NAME`) is
never rendered here: `jinja_template` and `for_model` give the built-in `harmony` template for
it, so a GGUF carrying it behaves exactly as a gpt-oss model does (prompt ids from our Harmony
renderer, its stop tokens, its parser and grammar).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from app.domain.instructions import gathered, later_instructions, turn_text
from app.domain.messages import Conversation, Message, ReasoningEffort, Role
from app.templates.base import OutputParser, Template, TemplateDefaults, Tokenizer
from app.templates.calls.detect import Detection, detect
from app.templates.calls.format import (
    CallFormat,
    arguments_of,
    calls_in,
    declared_tools,
    name_of,
    openai_tools,
)
from app.templates.calls.grammar import ThinkBlock
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja_render import RENDER_CHARS, RENDER_SECONDS, JinjaTemplateError, render
from app.templates.jinja_stops import opens_think, template_stop_ids
from app.templates.jinja_variables import extra_variables
from app.templates.reasoning_markup import chosen_tags, reasoning_markup, spelled_markers
from app.templates.text_output import TextOutputParser

_SENTINEL = re.compile("\ue000(\\d+)\ue001")
HARMONY_MARKERS = ("<|start|>", "<|channel|>", "<|message|>", "<|call|>", " to=", "functions.")


def harmony_source(source: str) -> bool:
    """Whether a chat template is gpt-oss's: it writes every Harmony marker a call needs."""
    return all(marker in source for marker in HARMONY_MARKERS)


def jinja_template(source: str, bos: str = "", eos: str = "") -> Template:
    """The template for a GGUF's chat template `source`: the built-in `harmony` one for
    gpt-oss's, else `source` rendered in the sandbox (`GgufJinja`)."""
    return HarmonyTemplate() if harmony_source(source) else GgufJinja(source, bos, eos)


def _harmless(value: Any) -> Any:
    """`value` with every string leaf made harmless text (an empty one stays empty)."""
    if isinstance(value, str):
        return "x" if value else ""
    if isinstance(value, dict):
        return {k: _harmless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_harmless(v) for v in value]
    return value


def _neutral(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The injection check's baseline: `messages` with what their authors wrote (contents and
    calls' arguments) made harmless text, and their structure (roles, names, ids) kept, so the
    template takes the same branches."""
    out = []
    for m in messages:
        m = {**m, "content": _harmless(m.get("content"))}
        if m.get("tool_calls"):
            m["tool_calls"] = [
                {
                    **c,
                    "function": {
                        **c["function"],
                        "arguments": _harmless(c["function"]["arguments"]),
                    },
                }
                for c in m["tool_calls"]
            ]
        out.append(m)
    return out


def openai_messages(
    conversation: Conversation, string_arguments: bool = False
) -> tuple[list[dict[str, Any]], list[str], bool]:
    """The conversation as OpenAI-shaped messages whose contents are sentinels, the texts they
    stand for, and whether any assistant message carries calls."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    pending: list[tuple[str, str]] = []  # (name, id) of calls awaiting their results
    called = False

    def content(text: str) -> str:
        texts.append(text)
        return f"\ue000{len(texts) - 1}\ue001"

    for m in conversation.messages:
        call = calls_in(m)
        if call is not None:
            called = True
            if not out or out[-1]["role"] != "assistant":
                out.append({"role": "assistant", "content": "", "tool_calls": []})
            args = arguments_of(call)
            ident = f"call_{sum(len(o.get('tool_calls', ())) for o in out) + 1:04d}"
            out[-1].setdefault("tool_calls", []).append(
                {
                    "id": ident,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(args, ensure_ascii=False)
                        if string_arguments
                        else args,
                    },
                }
            )
            pending.append((call.name, ident))
        elif m.author.role is Role.TOOL:
            name = name_of(m.author.name or "")
            found = next((p for p in pending if p[0] == name), pending[0] if pending else None)
            if found is not None:
                pending.remove(found)
            out.append(
                {
                    "role": "tool",
                    "name": name,
                    "tool_call_id": found[1] if found else "",
                    "content": content(m.text),
                }
            )
        elif m.channel in (None, "final") and not m.recipient:
            _add_turn(out, m, content)
    return out, texts, called


def _add_turn(out: list[dict[str, Any]], m: Message, content: Any) -> None:
    role = "system" if m.author.role is Role.DEVELOPER else m.author.role.value
    last = out[-1] if out else {}
    empty = not last.get("content") and not last.get("tool_calls")
    if role == last.get("role") == "assistant" and empty:
        last["content"] = content(m.text)
        return
    text = turn_text(m) if role == "system" else m.text
    out.append({"role": role, "content": content(text)})


class GgufJinja(Template):
    name = "gguf-jinja"
    defaults = TemplateDefaults()

    def __init__(self, source: str = "", bos: str = "", eos: str = "") -> None:
        self.source, self.bos, self.eos = source, bos, eos
        self.thinks = "<think>" in source  # type: ignore[misc]
        self._opened_think = False  # the last prompt ended inside an open `<think>`
        found = self.detection().format if source else None
        self.tool_calls = found.name if found is not None else None  # type: ignore[misc]
        self.reasoning = reasoning_markup(source, bos, eos) if source else None
        self.think_tags = chosen_tags(self.reasoning, found.think if found is not None else None)
        opens = found is not None and opens_think(source, self.think_tags[0], bos, eos)
        self.opens_think = opens  # type: ignore[misc]

    def for_model(self, metadata: dict[str, Any]) -> Template:
        source = metadata.get("tokenizer.chat_template")
        if not isinstance(source, str) or not source.strip():
            raise JinjaTemplateError("this model stores no chat template; choose another template")
        bos, eos = str(metadata.get("x.bos_text", "")), str(metadata.get("x.eos_text", ""))
        return jinja_template(source, bos, eos)

    def detection(self) -> Detection:
        """The template's call format, or why it has none (cached per source)."""
        return detect(self.source, self.bos, self.eos)

    def call_format(self) -> CallFormat | None:
        return self.detection().format if self.source else None

    def think_block(self) -> ThinkBlock | None:
        """The block the parser reads (`think_tags`): where the template thinks, writes
        reasoning markup of its own, or its generation prompt opens one."""
        derived = self.reasoning is not None and self.reasoning.tags == self.think_tags
        if self.call_format() is None or not (self.thinks or self.opens_think or derived):
            return None
        return ThinkBlock(self.think_tags, self.opens_think)

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The template's text for `messages` (`JinjaTemplateError` when it cannot be used)."""
        return render(
            self.source,
            messages=messages,
            tools=tools or None,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos,
            eos_token=self.eos,
            **extra_variables(tools),
        )

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        if later_instructions(conversation):
            try:
                return self._ids(conversation, tokenizer, in_place=True)
            except JinjaTemplateError:  # the template has no place for them: they lead
                conversation = gathered(conversation)
        return self._ids(conversation, tokenizer)

    def _ids(
        self, conversation: Conversation, tokenizer: Tokenizer, *, in_place: bool = False
    ) -> list[int]:
        """The prompt's ids; `in_place`: a `JinjaTemplateError` unless every message's text
        is where the template put it (none dropped or rewritten)."""
        strings = self.detection().string_arguments if self.source else False
        messages, texts, called = openai_messages(conversation, strings)
        tools = openai_tools(declared_tools(conversation))
        marked = self.render(messages, tools)
        self._opened_think = marked.rstrip().endswith(self.think_tags[0])
        found = [int(i) for i in _SENTINEL.findall(marked)]
        if sorted(found) == list(range(len(texts))):
            out: list[int] = []
            for i, part in enumerate(_SENTINEL.split(marked)):
                if i % 2:
                    out += tokenizer.tokenize(texts[int(part)], special=False)
                elif part:
                    out += tokenizer.tokenize(part, special=True)
            if called:  # the template wrote the calls' arguments itself
                self._guard(out, _neutral(_filled(messages, texts)), tools, tokenizer)
            return out
        if in_place:
            raise JinjaTemplateError("the model's chat template drops or rewrites message text")
        for text in texts:
            if tokenizer.tokenize(text, special=True) != tokenizer.tokenize(text, special=False):
                raise JinjaTemplateError(
                    "the model's chat template rewrites message text, and a message spells a"
                    " control token; choose a built-in template for this model"
                )
        ids = tokenizer.tokenize(self.render(_filled(messages, texts), tools), special=True)
        self._guard(ids, _neutral(messages), tools, tokenizer)
        return ids

    def _guard(
        self,
        ids: list[int],
        neutral: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tokenizer: Tokenizer,
    ) -> None:
        """Refuse a prompt holding control tokens a rendering of neutral text does not."""
        base = tokenizer.tokenize(self.render(neutral, tools), special=True)
        control = {i for i, piece in enumerate(tokenizer.token_table()) if piece == b""}
        if sorted(i for i in ids if i in control) != sorted(i for i in base if i in control):
            raise JinjaTemplateError(
                "the model's chat template turns message text into control tokens; choose a"
                " built-in template for this model"
            )

    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        if not self.source:
            return [tokenizer.eos_id] if tokenizer.eos_id >= 0 else []
        fmt = self.call_format()
        source, bos, eos = self.source, self.bos, self.eos
        return template_stop_ids(tokenizer, source, bos, eos, fmt, self.think_tags)

    def output_parser(self, tokenizer: Tokenizer, tools: Collection[str] = ()) -> OutputParser:
        spelled = spelled_markers(tokenizer, self.think_tags) if self.reasoning else {}
        spelled.update({i: m for m, i in self.control_markers(tokenizer).items()})
        return TextOutputParser(
            tokenizer.token_table(),
            self.stop_ids(tokenizer),
            self.call_format(),
            spelled,
            thinking=self._opened_think,
            think=self.think_tags,
            tools=tools,
        )


def _filled(messages: list[dict[str, Any]], texts: list[str]) -> list[dict[str, Any]]:
    """`messages` with each sentinel content replaced by its text."""

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return _SENTINEL.sub(lambda m: texts[int(m.group(1))], value)
        return value

    return [{k: fill(v) if k == "content" else v for k, v in m.items()} for m in messages]


__all__ = [
    "HARMONY_MARKERS",
    "RENDER_CHARS",
    "RENDER_SECONDS",
    "GgufJinja",
    "JinjaTemplateError",
    "harmony_source",
    "jinja_template",
    "openai_messages",
]
