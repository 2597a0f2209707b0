"""Conversations and messages of the Harmony model, as frozen pydantic values.

Guarantees: values are immutable (updates return new objects: `with_message`,
`with_channel`, ...); `Conversation.to_dict()` writes the JSON form of openai-harmony's
`Conversation.to_json()` and `Conversation.from_dict()` reads everything its
`Conversation.from_json()` accepts (content as a list or as one plain string, `name`
present or absent). System-content fields whose default is not null are written as an
explicit `null` when unset, so a round trip never turns "unset" into the default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import InvalidInputError

DEFAULT_MODEL_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
DEFAULT_KNOWLEDGE_CUTOFF = "2024-06"
CHANNELS: tuple[str, ...] = ("analysis", "commentary", "final")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Role(StrEnum):
    """Who wrote a message."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ReasoningEffort(StrEnum):
    """How long gpt-oss thinks; rendered as `Reasoning: low|medium|high`."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Author(_Frozen):
    """The role of a message's author and, for tools and named users, a name."""

    role: Role
    name: str | None = None


class TextContent(_Frozen):
    """Plain text: always encoded as ordinary tokens."""

    type: Literal["text"] = "text"
    text: str


IMAGE_MARKER = "\ue0f0"
"""Where an image stands in a message's `text`: templates write it like any text, and the
tokenizer of a model that sees images turns each into the image's place in the prompt."""


class ImageContent(_Frozen):
    """An image in a message: its bytes are kept apart under `sha256` (`app/images/kept.py`),
    the message holds what identifies and describes them."""

    type: Literal["image"] = "image"
    sha256: str = Field(pattern="^[0-9a-f]{64}$")
    mime: str = "image/png"
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    name: str = ""


class ToolDescription(_Frozen):
    """One tool: a name, a description and a JSON Schema for its parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class ToolNamespaceConfig(_Frozen):
    """A namespace of tools (`functions`, `browser`, `python`, ...)."""

    name: str
    description: str | None = None
    tools: tuple[ToolDescription, ...] = ()


class ChannelConfig(_Frozen):
    """The channels a model may use, and whether every message must name one."""

    valid_channels: tuple[str, ...] = CHANNELS
    channel_required: bool = True


class SystemContent(_Frozen):
    """The system message: identity, dates, reasoning effort, channels, built-in tools."""

    type: Literal["system_content"] = "system_content"
    model_identity: str | None = DEFAULT_MODEL_IDENTITY
    reasoning_effort: ReasoningEffort | None = ReasoningEffort.MEDIUM
    conversation_start_date: str | None = None
    knowledge_cutoff: str | None = DEFAULT_KNOWLEDGE_CUTOFF
    channel_config: ChannelConfig | None = Field(default_factory=ChannelConfig)
    tools: dict[str, ToolNamespaceConfig] | None = None

    def with_tools(self, namespace: ToolNamespaceConfig) -> SystemContent:
        """A copy with `namespace` added (replacing one of the same name)."""
        return self.model_copy(update={"tools": {**(self.tools or {}), namespace.name: namespace}})


class ResponseFormatSpec(_Frozen):
    """A JSON answer format the developer message announces (Harmony's "Response Formats")."""

    name: str
    description: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")


class DeveloperContent(_Frozen):
    """The developer message: instructions, function tools and response formats."""

    type: Literal["developer_content"] = "developer_content"
    instructions: str | None = None
    tools: dict[str, ToolNamespaceConfig] | None = None
    response_formats: tuple[ResponseFormatSpec, ...] = ()

    def with_tools(self, namespace: ToolNamespaceConfig) -> DeveloperContent:
        """A copy with `namespace` added (replacing one of the same name)."""
        return self.model_copy(update={"tools": {**(self.tools or {}), namespace.name: namespace}})

    def with_function_tools(self, tools: Sequence[ToolDescription]) -> DeveloperContent:
        """A copy whose `functions` namespace holds `tools`."""
        return self.with_tools(ToolNamespaceConfig(name="functions", tools=tuple(tools)))


Content = TextContent | ImageContent | SystemContent | DeveloperContent


class Message(_Frozen):
    """One Harmony message: author, contents and the header fields."""

    author: Author
    content: tuple[Content, ...] = ()
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None

    @classmethod
    def of(cls, role: Role | str, content: str | Content, **header: str | None) -> Message:
        """A message from `role` with one content (a string becomes text)."""
        body = TextContent(text=content) if isinstance(content, str) else content
        return cls(author=Author(role=Role(role)), content=(body,), **header)

    @property
    def text(self) -> str:
        """The concatenated text contents, each image as `IMAGE_MARKER` in its place."""
        return "".join(
            c.text if isinstance(c, TextContent) else IMAGE_MARKER
            for c in self.content
            if isinstance(c, TextContent | ImageContent)
        )

    @property
    def images(self) -> tuple[ImageContent, ...]:
        """The images the message carries, in order."""
        return tuple(c for c in self.content if isinstance(c, ImageContent))

    def with_channel(self, channel: str | None) -> Message:
        return self.model_copy(update={"channel": channel})

    def with_recipient(self, recipient: str | None) -> Message:
        return self.model_copy(update={"recipient": recipient})

    def with_content_type(self, content_type: str | None) -> Message:
        return self.model_copy(update={"content_type": content_type})

    def to_dict(self) -> dict[str, Any]:
        return message_to_dict(self)


def user_message(text: str | Message, images: Sequence[ImageContent] = ()) -> Message:
    """The user's message: `text` after its `images` (a message is taken as it is)."""
    if isinstance(text, Message):
        return text
    return Message(author=Author(role=Role.USER), content=(*images, TextContent(text=text)))


class Conversation(_Frozen):
    """An ordered, immutable list of messages."""

    messages: tuple[Message, ...] = ()

    def with_message(self, message: Message) -> Conversation:
        """A copy with `message` appended."""
        return self.model_copy(update={"messages": (*self.messages, message)})

    def with_messages(self, messages: Sequence[Message]) -> Conversation:
        """A copy with `messages` appended."""
        return self.model_copy(update={"messages": (*self.messages, *messages)})

    def with_header(
        self, role: Literal[Role.SYSTEM, Role.DEVELOPER], **update: Any
    ) -> Conversation:
        """A copy whose system (or developer) message has the fields in `update` replaced.
        `role` is `Role.SYSTEM` or `Role.DEVELOPER`.

        When there is none, one is added: the system message first, the developer message
        right after the system message."""
        kind = SystemContent if role is Role.SYSTEM else DeveloperContent
        messages = list(self.messages)
        for i, m in enumerate(messages):
            if m.author.role is role and isinstance(m.content[0], kind):
                header = m.content[0].model_copy(update=update)
                messages[i] = m.model_copy(update={"content": (header, *m.content[1:])})
                return Conversation(messages=tuple(messages))
        at = (
            0
            if role is Role.SYSTEM
            else int(bool(messages) and messages[0].author.role is Role.SYSTEM)
        )
        messages.insert(at, Message.of(role, kind().model_copy(update=update)))
        return Conversation(messages=tuple(messages))

    def to_dict(self) -> dict[str, Any]:
        return {"messages": [message_to_dict(m) for m in self.messages]}

    @classmethod
    def from_dict(cls, data: object) -> Conversation:
        """Read openai-harmony's JSON form; an `InvalidInputError` says what is wrong."""
        if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
            raise InvalidInputError('a conversation is an object with a "messages" list')
        messages = []
        for index, raw in enumerate(data["messages"]):
            try:
                messages.append(message_from_dict(raw))
            except InvalidInputError as exc:
                raise InvalidInputError(f"message {index}: {exc.message}") from exc
        return cls(messages=tuple(messages))


# --- the openai-harmony JSON form -------------------------------------------------------

_EFFORT_JSON = {
    ReasoningEffort.LOW: "Low",
    ReasoningEffort.MEDIUM: "Medium",
    ReasoningEffort.HIGH: "High",
}


def _namespaces_to_dict(tools: dict[str, ToolNamespaceConfig]) -> dict[str, Any]:
    return {name: ns.model_dump(exclude_none=True, mode="json") for name, ns in tools.items()}


def content_to_dict(content: Content) -> dict[str, Any]:
    """One content item in openai-harmony's JSON form."""
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    if isinstance(content, ImageContent):
        return content.model_dump(mode="json")
    out: dict[str, Any] = {}
    if isinstance(content, SystemContent):
        out["model_identity"] = content.model_identity
        effort = content.reasoning_effort
        out["reasoning_effort"] = None if effort is None else _EFFORT_JSON[effort]
        if content.conversation_start_date is not None:
            out["conversation_start_date"] = content.conversation_start_date
        out["knowledge_cutoff"] = content.knowledge_cutoff
        channels = content.channel_config
        out["channel_config"] = None if channels is None else channels.model_dump(mode="json")
    else:
        if content.instructions is not None:
            out["instructions"] = content.instructions
        if content.response_formats:
            out["response_formats"] = [
                f.model_dump(by_alias=True, exclude_none=True) for f in content.response_formats
            ]
    if content.tools is not None:
        out["tools"] = _namespaces_to_dict(content.tools)
    out["type"] = content.type
    return out


def message_to_dict(message: Message) -> dict[str, Any]:
    """One message in openai-harmony's JSON form."""
    out: dict[str, Any] = {
        "role": message.author.role.value,
        "name": message.author.name,
        "content": [content_to_dict(c) for c in message.content],
    }
    for key in ("channel", "recipient", "content_type"):
        value = getattr(message, key)
        if value is not None:
            out[key] = value
    return out


_CONTENT_TYPES: dict[str, type[Content]] = {
    "text": TextContent,
    "image": ImageContent,
    "system_content": SystemContent,
    "developer_content": DeveloperContent,
}


def content_from_dict(raw: object) -> Content:
    """One content item from openai-harmony's JSON form."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError("each content item must be an object")
    kind = raw.get("type")
    model = _CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InvalidInputError(f"unknown content type {kind!r}")
    # Unknown keys are ignored, as openai-harmony's reader ignores them.
    fields = {k: v for k, v in raw.items() if k in model.model_fields and k != "type"}
    effort = fields.get("reasoning_effort")
    if isinstance(effort, str):
        fields["reasoning_effort"] = effort.lower()
    return model(**fields)


def message_from_dict(raw: object) -> Message:
    """Read one message in openai-harmony's JSON form."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError("a message must be an object")
    try:
        role = Role(str(raw.get("role")))
    except ValueError as exc:
        raise InvalidInputError(f"unknown role {raw.get('role')!r}") from exc
    content = raw.get("content", [])
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise InvalidInputError('"content" must be a list or a string')
    try:
        return Message(
            author=Author(role=role, name=raw.get("name")),
            content=tuple(content_from_dict(c) for c in content),
            channel=raw.get("channel"),
            recipient=raw.get("recipient"),
            content_type=raw.get("content_type"),
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidInputError(problems) from exc
