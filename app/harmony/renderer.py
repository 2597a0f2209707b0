"""Conversation → Harmony token ids, token-identical to the reference renderer.

Guarantees: every piece of text (message bodies, names, recipients, channels, content types)
is encoded as ordinary text, so a user or tool message that spells `<|start|>` or
`<|channel|>` never yields a control token; control tokens are emitted only by id. Stored
history always ends a message with `<|end|>` (or `<|call|>` for an assistant tool call);
only the training mode ends the last final answer with `<|return|>`. Prior analysis is
dropped as the reference drops it: when the last assistant message is a `final`, analysis
messages before the conversation's first `final` are left out (`auto_drop_analysis`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.domain.messages import (
    Content,
    Conversation,
    DeveloperContent,
    ImageContent,
    Message,
    ResponseFormatSpec,
    Role,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from app.errors import RenderError
from app.harmony import encoding as enc
from app.harmony.schema_ts import tools_section

_CONSTRAIN_TEXT = "<|constrain|>"


class RenderMode(StrEnum):
    """What the rendered ids are for."""

    COMPLETION = "completion"  # history, then `<|start|>{next_role}` for the model to continue
    PLAIN = "plain"  # history only
    TRAINING = "training"  # history; a last final answer ends with `<|return|>`


@dataclass(frozen=True)
class RenderConfig:
    """Rendering switches, as the reference renderer names them."""

    auto_drop_analysis: bool = True


def has_function_tools(messages: Sequence[Message]) -> bool:
    """True when a developer message declares a non-empty `functions` namespace."""
    for message in messages:
        for content in message.content:
            if isinstance(content, DeveloperContent) and content.tools:
                functions = content.tools.get("functions")
                if functions is not None and functions.tools:
                    return True
    return False


def kept_messages(messages: Sequence[Message], config: RenderConfig) -> list[Message]:
    """The messages that are rendered after the chain-of-thought rule is applied."""
    last_assistant = next((m for m in reversed(messages) if m.author.role is Role.ASSISTANT), None)
    if not (config.auto_drop_analysis and last_assistant and last_assistant.channel == "final"):
        return list(messages)
    first_final = next((i for i, m in enumerate(messages) if m.channel == "final"), len(messages))
    return [m for i, m in enumerate(messages) if not (i < first_final and m.channel == "analysis")]


def normalize_history(tokens: Sequence[int]) -> list[int]:
    """Generated ids as they belong in stored history: a trailing `<|return|>` becomes `<|end|>`."""
    out = list(tokens)
    if out and out[-1] == enc.RETURN:
        out[-1] = enc.END
    return out


def system_text(system: SystemContent, *, function_tools: bool) -> str:
    """The text body of a system message."""
    sections = []
    top = []
    if system.model_identity is not None:
        top.append(system.model_identity)
    if system.knowledge_cutoff is not None:
        top.append(f"Knowledge cutoff: {system.knowledge_cutoff}")
    if system.conversation_start_date is not None:
        top.append(f"Current date: {system.conversation_start_date}")
    if top:
        sections.append("\n".join(top))
    if system.reasoning_effort is not None:
        sections.append(f"Reasoning: {system.reasoning_effort.value}")
    if system.tools:
        sections.append(tools_section(system.tools))
    channels = system.channel_config
    if channels is not None and channels.valid_channels:
        header = f"# Valid channels: {', '.join(channels.valid_channels)}."
        if channels.channel_required:
            header += " Channel must be included for every message."
        if function_tools:
            header += "\nCalls to these tools must go to the commentary channel: 'functions'."
        sections.append(header)
    return "\n\n".join(sections)


def developer_text(developer: DeveloperContent) -> str:
    """The text body of a developer message."""
    sections = []
    if developer.instructions is not None:
        sections.extend(["# Instructions", developer.instructions])
    if developer.tools:
        sections.append(tools_section(developer.tools))
    if developer.response_formats:
        sections.append(response_formats_section(developer.response_formats))
    return "\n\n".join(sections)


def response_formats_section(formats: Sequence[ResponseFormatSpec]) -> str:
    """The Harmony guide's `# Response Formats` section: each schema as compact JSON."""
    parts = ["# Response Formats"]
    for spec in formats:
        lines = [f"## {spec.name}\n"]
        if spec.description:
            lines.append(f"// {spec.description}")
        lines.append(json.dumps(spec.schema_, separators=(",", ":"), ensure_ascii=False))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


class Renderer:
    """Renders messages and conversations of the domain model to o200k_harmony ids."""

    def __init__(self, encoding: enc.HarmonyEncoding | None = None) -> None:
        self.encoding = encoding or enc.load_encoding()
        self._short = functools.lru_cache(maxsize=4096)(self.encoding.encode_ordinary)

    def _text(self, text: str, into: list[int]) -> None:
        into.extend(self.encoding.encode_ordinary(text))

    def _content(self, message: Message, content: Content, function_tools: bool) -> str:
        role = message.author.role
        if isinstance(content, TextContent):
            return content.text
        if isinstance(content, ImageContent):
            raise RenderError("gpt-oss reads text only: a message with an image cannot go to it")
        if isinstance(content, SystemContent):
            if role is not Role.SYSTEM:
                raise RenderError(f"system content may only appear in a system message, not {role}")
            return system_text(content, function_tools=function_tools)
        if role is not Role.DEVELOPER:
            raise RenderError(
                f"developer content may only appear in a developer message, not {role}"
            )
        return developer_text(content)

    def _header(self, message: Message, into: list[int]) -> None:
        author = message.author
        if author.role is Role.TOOL:
            if author.name is None:
                raise RenderError("a tool message needs the tool's name as its author name")
            into.extend(self._short(author.name))
        else:
            into.extend(self._short(author.role.value))
            if author.name is not None:
                into.extend(self._short(f":{author.name}"))
        if message.recipient is not None and message.recipient != "all":
            into.extend(self._short(f" to={message.recipient}"))
        if message.channel is not None:
            into.append(enc.CHANNEL)
            into.extend(self._short(message.channel))
        ctype = message.content_type
        if ctype is not None:
            if ctype.startswith(_CONSTRAIN_TEXT):
                into.extend(self._short(" "))
                into.append(enc.CONSTRAIN)
                if rest := ctype[len(_CONSTRAIN_TEXT) :]:
                    into.extend(self._short(rest))
            else:
                into.extend(self._short(f" {ctype}"))

    def render_message(
        self, message: Message, into: list[int] | None = None, *, function_tools: bool = False
    ) -> list[int]:
        """Append one message's ids to `into` (a new list if None) and return it."""
        out = [] if into is None else into
        out.append(enc.START)
        self._header(message, out)
        out.append(enc.MESSAGE)
        for content in message.content:
            self._text(self._content(message, content, function_tools), out)
        is_call = message.author.role is Role.ASSISTANT and message.recipient is not None
        out.append(enc.CALL if is_call else enc.END)
        return out

    def render_messages(self, messages: Sequence[Message], config: RenderConfig) -> list[int]:
        """History ids (the plain mode)."""
        function_tools = has_function_tools(messages)
        out: list[int] = []
        for message in kept_messages(messages, config):
            self.render_message(message, out, function_tools=function_tools)
        return out

    def render(
        self,
        conversation: Conversation,
        mode: RenderMode = RenderMode.COMPLETION,
        *,
        next_role: Role = Role.ASSISTANT,
        config: RenderConfig | None = None,
    ) -> list[int]:
        """Ids of `conversation` rendered for `mode`."""
        messages = conversation.messages
        out = self.render_messages(messages, config or RenderConfig())
        if mode is RenderMode.COMPLETION:
            out.append(enc.START)
            out.extend(self._short(next_role.value))
        elif mode is RenderMode.TRAINING and out:
            last = messages[-1]
            if last.author.role is Role.ASSISTANT and last.channel == "final":
                out[-1] = enc.RETURN
        return out


def tool_tokens(tools: Sequence[ToolDescription]) -> int:
    """How many tokens these functions' definitions add to a developer message."""
    if not tools:
        return 0
    namespace = ToolNamespaceConfig(name="functions", tools=tuple(tools))
    encoding = enc.load_encoding()
    full = developer_text(DeveloperContent(tools={"functions": namespace}))
    return len(encoding.encode_ordinary(full)) - len(
        encoding.encode_ordinary(developer_text(DeveloperContent()))
    )
