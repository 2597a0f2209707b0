"""Between transcripts and Harmony conversations (HIP-1).

Transcript → Harmony: `call_id`, `intent` and literal markers never reach the model; literal
blocks become ordinary text; `<|return|>` becomes history's `<|end|>`; a `tool` reply becomes
a message authored by the tool. Harmony → transcript: each tool call gets a unique `call_id`
that its reply echoes; commentary without a tool recipient gets `intent=preamble`; the final
answer that ends a turn ends with `<|return|>`; structured system and developer contents are
kept in the header (`harmony_desk.contents`) beside their rendered text, so Harmony →
transcript → Harmony is the identity (for messages with one content each; several text
contents of one message are joined).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.domain.messages import (
    IMAGE_MARKER,
    Author,
    Content,
    Conversation,
    DeveloperContent,
    ImageContent,
    Message,
    Role,
    SystemContent,
    TextContent,
    content_from_dict,
    content_to_dict,
)
from app.domain.visibility import is_tool_recipient
from app.errors import ErrorCode, InvalidInputError, TranscriptError
from app.harmony.ocm.model import CHANNELS, OcmMessage, Segment, Terminator, Transcript
from app.harmony.renderer import developer_text, has_function_tools, system_text

_CONSTRAIN = "<|constrain|>"
EXTENSION_KEY = "harmony_desk"


def new_call_id() -> str:
    """A fresh call id."""
    return f"call_{secrets.token_hex(6)}"


# --- transcript → Harmony -----------------------------------------------------------------


def _stored_contents(header: Mapping[str, Any]) -> dict[int, Content]:
    ext = header.get(EXTENSION_KEY)
    raw = ext.get("contents") if isinstance(ext, Mapping) else None
    out: dict[int, Content] = {}
    if not isinstance(raw, Mapping):
        return out
    for key, value in raw.items():
        if not (isinstance(value, Mapping) and str(key).isdigit()):
            continue
        try:
            content = content_from_dict(value)
        except (InvalidInputError, ValueError):
            continue  # an edited or foreign extension: the body text stands
        if isinstance(content, SystemContent | DeveloperContent):
            out[int(key)] = content
    return out


def _harmony_message(message: OcmMessage, legacy: bool) -> Message:
    role = Role(message.role)
    channel = message.channel
    if legacy and role is not Role.ASSISTANT:
        channel = None  # 1.x: everything reads as final, but only answers have channels
    content_type = message.content_type
    if message.constrain is not None:
        content_type = _CONSTRAIN + message.constrain
    return Message(
        author=Author(role=role, name=message.name),
        content=(TextContent(text=message.text),),
        channel=channel,
        recipient=message.recipient,
        content_type=content_type,
    )


def to_conversation(transcript: Transcript) -> Conversation:
    """The Harmony conversation a transcript describes (what the model is sent)."""
    messages = [_harmony_message(m, transcript.legacy) for m in transcript.messages]
    stored = _stored_contents(transcript.header)
    structured = list(messages)
    for index, content in stored.items():
        if (
            index < len(messages)
            and messages[index].author.role.value == content.type.split("_")[0]
        ):
            structured[index] = messages[index].model_copy(update={"content": (content,)})
    tools = has_function_tools(structured)
    for index, content in stored.items():
        if (
            structured[index] is not messages[index]
            and _rendered(content, tools) == messages[index].text
        ):
            messages[index] = structured[index]
    return Conversation(messages=tuple(messages))


def _rendered(content: Content, function_tools: bool) -> str:
    if isinstance(content, SystemContent):
        return system_text(content, function_tools=function_tools)
    if isinstance(content, DeveloperContent):
        return developer_text(content)
    if isinstance(content, ImageContent):
        return IMAGE_MARKER
    return content.text


# --- Harmony → transcript -----------------------------------------------------------------


def _check_channel(message: Message) -> None:
    if message.channel is not None and message.channel not in CHANNELS:
        raise TranscriptError(
            ErrorCode.PARSE_HEADER,
            f"channel {message.channel!r} cannot be written in OpenChatML"
            " (analysis, commentary or final)",
        )


def _terminator(messages: Sequence[Message], index: int) -> Terminator:
    message = messages[index]
    if message.author.role is not Role.ASSISTANT:
        return Terminator.END
    if message.recipient is not None:
        return Terminator.CALL
    following = messages[index + 1] if index + 1 < len(messages) else None
    ends_turn = following is None or following.author.role is not Role.ASSISTANT
    return Terminator.RETURN if message.channel == "final" and ends_turn else Terminator.END


def _header(conversation: Conversation, model: str | None) -> dict[str, Any]:
    header: dict[str, Any] = {"version": "2.2"}
    if model:
        header["model"] = model
    settings: dict[str, Any] = {}
    contents: dict[str, Any] = {}
    for index, message in enumerate(conversation.messages):
        for content in message.content:
            if isinstance(content, SystemContent):
                if content.reasoning_effort is not None:
                    settings["reasoning_effort"] = content.reasoning_effort.value
                builtins = sorted(set(content.tools or {}) & {"browser", "python"})
                if builtins:
                    settings["builtin_tools"] = builtins
            if isinstance(content, SystemContent | DeveloperContent):
                contents[str(index)] = content_to_dict(content)
    if settings:
        header["generation_settings"] = settings
    header["profiles"] = {"harmony": {"enabled": True, "encoding": "o200k_harmony"}}
    if contents:
        header[EXTENSION_KEY] = {"contents": contents}
    return header


def from_conversation(
    conversation: Conversation,
    *,
    model: str | None = None,
    call_id: Callable[[], str] = new_call_id,
) -> Transcript:
    """A transcript of a Harmony conversation (history or fresh model output)."""
    messages = conversation.messages
    tools = has_function_tools(messages)
    pending: list[tuple[str, str]] = []  # (call id, recipient) not yet answered
    used: set[str] = set()
    out = []
    for index, message in enumerate(messages):
        _check_channel(message)
        role = message.author.role
        ident = None
        terminator = _terminator(messages, index)
        if terminator is Terminator.CALL:
            ident = call_id()
            while ident in used:
                ident = call_id()
            used.add(ident)
            pending.append((ident, message.recipient or ""))
        elif role is Role.TOOL:
            match = next((p for p in pending if p[1] == message.author.name), None)
            if match is not None:
                pending.remove(match)
                ident = match[0]
        preamble = (
            role is Role.ASSISTANT
            and message.channel == "commentary"
            and not is_tool_recipient(message.recipient)
        )
        ctype = message.content_type
        constrain = ctype[len(_CONSTRAIN) :] if ctype and ctype.startswith(_CONSTRAIN) else None
        body = "".join(_rendered(c, tools) for c in message.content)
        out.append(
            OcmMessage(
                role=role.value,
                body=(Segment(body),) if body else (),
                channel=message.channel,
                recipient=message.recipient,
                call_id=ident,
                name=message.author.name,
                intent="preamble" if preamble else None,
                content_type=None if constrain is not None else ctype,
                constrain=constrain,
                terminator=terminator,
            )
        )
    return Transcript(header=_header(conversation, model), messages=tuple(out))


def conversation_from_dict(data: object) -> Conversation:
    """A Harmony conversation from its JSON form, as a transcript-conversion input."""
    try:
        return Conversation.from_dict(data)
    except InvalidInputError as exc:
        raise TranscriptError(ErrorCode.PARSE_HEADER, exc.message) from exc
