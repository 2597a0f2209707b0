"""Hypothesis strategies for Harmony conversations and token streams."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from app.domain.builtin_tools import browser_namespace, python_namespace
from app.domain.messages import (
    Author,
    ChannelConfig,
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from app.harmony import encoding as enc

MARKERS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>",
           "<|constrain|>", "<|endoftext|>"]

words = st.sampled_from(
    ["hello", "world", "Paris", "2+2", "to=functions.x", "naïve", "日本語", "💖", "\n", "  ",
     "{\"a\": 1}", "code", *MARKERS]
)
text = st.one_of(
    st.lists(words, max_size=8).map(" ".join),
    st.text(max_size=40),
)
ident = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
description = st.lists(st.sampled_from(["Does a thing.", "Second line", "Uses `x`."]), max_size=3).map(
    "\n".join
)

scalar_schema = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "number"}),
    st.just({"type": "integer", "default": 3}),
    st.just({"type": "boolean", "default": False}),
    st.just({"type": "string", "enum": ["a", "b"]}),
    st.just({"type": "string", "description": "A note.", "default": "x"}),
    st.just({"type": ["number", "string"]}),
    st.just({"type": "array", "items": {"type": "string"}}),
    st.just({"type": "array"}),
    st.just({"type": "string", "nullable": True}),
    st.just({"type": "string", "examples": ["e1", "e2"], "title": "T"}),
    st.just({"oneOf": [{"type": "string", "description": "S"}, {"type": "number"}], "description": "P"}),
)


@st.composite
def object_schema(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    names = draw(st.lists(ident, max_size=4, unique=True))
    child = scalar_schema if depth > 0 else st.one_of(scalar_schema, object_schema(depth=1))
    props = {n: draw(child) for n in names}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if names:
        schema["required"] = draw(st.lists(st.sampled_from(names), unique=True))
    return schema


tools = st.lists(
    st.builds(
        ToolDescription,
        name=ident,
        description=description,
        parameters=st.one_of(st.none(), object_schema()),
    ),
    max_size=3,
)


@st.composite
def system_content(draw: st.DrawFn) -> SystemContent:
    content = SystemContent(
        model_identity=draw(st.one_of(st.none(), st.just("You are a helpful model."), text)),
        reasoning_effort=draw(st.one_of(st.none(), st.sampled_from(list(ReasoningEffort)))),
        conversation_start_date=draw(st.one_of(st.none(), st.just("2026-11-22"))),
        knowledge_cutoff=draw(st.one_of(st.none(), st.just("2024-06"))),
        channel_config=draw(
            st.one_of(
                st.none(),
                st.just(ChannelConfig()),
                st.just(ChannelConfig(valid_channels=("analysis", "final"), channel_required=False)),
            )
        ),
    )
    if draw(st.booleans()):
        content = content.with_tools(browser_namespace())
    if draw(st.booleans()):
        content = content.with_tools(python_namespace())
    return content


@st.composite
def developer_content(draw: st.DrawFn) -> DeveloperContent:
    content = DeveloperContent(instructions=draw(st.one_of(st.none(), text)))
    if draw(st.booleans()):
        content = content.with_function_tools(draw(tools))
    if draw(st.booleans()):
        ns = ToolNamespaceConfig(name="extra", description=draw(st.one_of(st.none(), description)),
                                 tools=tuple(draw(tools)))
        content = content.with_tools(ns)
    return content


channels = st.sampled_from([None, "analysis", "commentary", "final"])
recipients = st.sampled_from([None, "functions.get_weather", "browser.search", "python", "all"])
ctypes = st.sampled_from([None, "<|constrain|>json", "json", "code"])


@st.composite
def chat_message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from([Role.USER, Role.ASSISTANT, Role.ASSISTANT, Role.TOOL]))
    name = draw(st.sampled_from(["functions.get_weather", "browser.search"])) if role is Role.TOOL else None
    if role is Role.USER and draw(st.booleans()):
        name = "alice"
    contents = tuple(TextContent(text=t) for t in draw(st.lists(text, min_size=1, max_size=2)))
    return Message(
        author=Author(role=role, name=name),
        content=contents,
        channel=draw(channels),
        recipient=draw(recipients),
        content_type=draw(ctypes),
    )


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message.of(Role.SYSTEM, draw(system_content())))
    if draw(st.booleans()):
        messages.append(Message.of(Role.DEVELOPER, draw(developer_content())))
    messages.extend(draw(st.lists(chat_message(), max_size=6)))
    return Conversation(messages=tuple(messages))


# --- well-formed assistant completions, as the model writes them -------------------------

safe_text = st.lists(
    st.sampled_from(["hello", "world", "Paris", "naïve", "日本語", "💖", "\n", " ", "x=1;", "{\"a\":1}",
                     "<|start|>", "to=functions.f"]),
    max_size=8,
).map("".join)


@st.composite
def assistant_messages(draw: st.DrawFn) -> list[Message]:
    """A well-formed turn: analysis/preambles, then a final answer or one tool call."""
    out = [
        Message.of(Role.ASSISTANT, draw(safe_text), channel=draw(st.sampled_from(["analysis", "commentary"])))
        for _ in range(draw(st.integers(0, 3)))
    ]
    if draw(st.booleans()):
        out.append(Message.of(Role.ASSISTANT, draw(safe_text), channel="final"))
    else:
        out.append(
            Message.of(
                Role.ASSISTANT,
                '{"city": "Paris"}',
                channel=draw(st.sampled_from(["commentary", "analysis"])),
                recipient="functions.get_weather",
                content_type=draw(st.sampled_from([None, "<|constrain|>json", "json"])),
            )
        )
    return out


special_heavy_tokens = st.lists(
    st.one_of(
        st.sampled_from([enc.START, enc.END, enc.MESSAGE, enc.CHANNEL, enc.CONSTRAIN, enc.RETURN,
                         enc.CALL, enc.END_OF_TEXT, 200010, 201087]),
        st.sampled_from([173781, 35644, 17196, 12606, 815, 316, 935, 5701, 4108, 220, 198]),
        st.integers(0, enc.N_VOCAB - 1),
    ),
    max_size=60,
)
