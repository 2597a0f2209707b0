"""An Anthropic Messages request as the app's own `Asked`, converted straight from its blocks.

Guarantees: `system` (a string or text blocks) becomes the developer instructions — Claude Code's
billing line made the same on every request (`steady`), so its prompts can be reused — and so does
each `system` message, wherever it stands among the messages (a string or text blocks; any
other block is a 400 naming it): its text is appended to the instructions in the order given,
after `system`, as the shared transcript gathers a chat request's system messages — one
developer message first, whatever the model's template (llama-server instead passes such a
message on in place, for the model's template to render there or to refuse); text blocks
are joined; an assistant's `tool_use` blocks become its tool calls (their `input` as the
arguments' JSON) and its `thinking` blocks its reasoning (kept before calls only); a user's
`tool_result` blocks become tool results paired by `tool_use_id`, before the user's own text;
`tools` (`input_schema`), `tool_choice` (auto, any, tool, none), `thinking.budget_tokens`,
`output_config` (effort, at most high; a JSON schema), `max_tokens`, `stop_sequences` and the
sampling fields become the one `GenerationRequest` under the rules every API shares
(`app/server/asked.py`), with no other API's body in between. A user's `image` blocks with a
`base64` source become its images in their place among its text, checked and held for the
engine. Every problem is a 400 naming the field as this API spells it (`messages.I.content.J`,
`tools.I.input_schema`, `output_config.format`, `stop_sequences`): an image to a model that
reads text only, one by `url` (this server never fetches one) or by `file` id, an image anywhere
but a user's own content (a tool result, an assistant message, the system prompt), document
blocks, server tools, `mcp_servers` naming a server, a request with no user or assistant
message and a last such message from the assistant (a prefill) are refused, never dropped
silently; the fields given and not applied (`wire`: `ignored`) go with the `Asked`, to be said
in the warning header.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.constrain.constraint import JsonSchemaFormat, ResponseFormat, ToolChoice
from app.domain.messages import ImageContent, ToolDescription
from app.engine.request import GenerationRequest, SamplingAsk
from app.server.anthropic.wire import (
    Block,
    CountRequest,
    DocumentBlock,
    ImageBlock,
    MessageParam,
    MessagesRequest,
    OutputConfig,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolChoiceParam,
    ToolResultBlock,
    ToolUseBlock,
)
from app.server.asked import Asked, Target, checked, stops_of
from app.server.errors import ApiError, validated
from app.server.intake import check_schema
from app.server.pictures import image_of, no_files, not_fetched
from app.server.transcript import Call, Transcript

_PLAIN = (TextBlock, ImageBlock, DocumentBlock)  # the blocks a message's own content holds


def _refused(block: ImageBlock | DocumentBlock, param: str) -> ApiError:
    """The 400 for an image where images are not taken, or a document."""
    said = (
        "image blocks are not supported here: images are taken in a user message's own content"
        if isinstance(block, ImageBlock)
        else "document blocks are not supported: this server reads text and images"
    )
    return ApiError(400, said, param=param, code="unsupported_content")


def _text(blocks: Sequence[tuple[int, object]], param: str) -> str:
    """The text of `blocks` (with their indices; an image or document among them is a 400
    naming it)."""
    for j, block in blocks:
        if isinstance(block, ImageBlock | DocumentBlock):
            raise _refused(block, f"{param}.{j}")
    return "".join(b.text for _, b in blocks if isinstance(b, TextBlock))


def _image(block: ImageBlock, param: str, target: Target) -> ImageContent:
    """An image block's picture (its base64 data as a `data:` URL, decoded and checked)."""
    target.seeing(param, "image blocks")
    source = block.source
    kind = source.get("type")
    if kind == "url":
        raise not_fetched(str(source.get("url", "")), param)
    if kind == "file":
        raise no_files(param)
    data, media = source.get("data"), source.get("media_type")
    if kind != "base64" or not isinstance(data, str) or not isinstance(media, str):
        raise ApiError(
            400,
            "an image block's source is {type: base64, media_type, data}",
            param=f"{param}.source",
            code="invalid_image",
        )
    return image_of(f"data:{media};base64,{data}", param)


def _user(m: MessageParam, i: int, transcript: Transcript, target: Target) -> None:
    """A user's message `i`: its tool results first, then its own text and images."""
    if isinstance(m.content, str):
        transcript.user([m.content])
        return
    blocks: list[Block] = m.content
    for j, block in enumerate(blocks):
        if isinstance(block, ToolResultBlock):
            where = f"messages.{i}.content.{j}.content"
            given = block.content
            said = given if isinstance(given, str) else _text(list(enumerate(given)), where)
            transcript.tool(block.tool_use_id, f"Error: {said}" if block.is_error else said)
        elif not isinstance(block, _PLAIN):
            raise ApiError(
                400,
                f"a user message cannot hold {block.type} blocks",
                param=f"messages.{i}.content.{j}",
            )
    plain = [(j, b) for j, b in enumerate(blocks) if isinstance(b, _PLAIN)]
    if not any(isinstance(b, ImageBlock) for _, b in plain):
        if plain:
            transcript.user([_text(plain, f"messages.{i}.content")])
        return
    parts: list[str | ImageContent] = []
    for j, block in plain:
        param = f"messages.{i}.content.{j}"
        if isinstance(block, ImageBlock):
            parts.append(_image(block, param, target))
        elif isinstance(block, DocumentBlock):
            raise _refused(block, param)
        else:
            parts.append(block.text)
    transcript.user(parts)


def _assistant(m: MessageParam, i: int, transcript: Transcript) -> None:
    if isinstance(m.content, str):
        transcript.assistant(m.content)
        return
    texts: list[tuple[int, object]] = []
    calls: list[Call] = []
    thought = ""
    for j, block in enumerate(m.content):
        if isinstance(block, ToolUseBlock):
            calls.append(Call(block.id, block.name, json.dumps(block.input)))
        elif isinstance(block, ThinkingBlock):
            thought += block.thinking
        elif isinstance(block, _PLAIN):
            texts.append((j, block))
        elif not isinstance(block, RedactedThinkingBlock):  # encrypted elsewhere: not ours
            raise ApiError(
                400,
                f"an assistant message cannot hold {block.type} blocks",
                param=f"messages.{i}.content.{j}",
            )
    transcript.assistant(_text(texts, f"messages.{i}.content"), thought, calls)


def _system(m: MessageParam, i: int) -> str:
    """A system message's text (a block other than text is a 400 naming it)."""
    if isinstance(m.content, str):
        return m.content
    for j, block in enumerate(m.content):
        if not isinstance(block, TextBlock):
            raise ApiError(
                400,
                f"a system message holds text blocks only, not {block.type} blocks",
                param=f"messages.{i}.content.{j}",
            )
    return _text(list(enumerate(m.content)), f"messages.{i}.content")


def _check_last(messages: Sequence[MessageParam]) -> None:
    """The last message but system ones must be the user's (a 400 naming it otherwise)."""
    turns = [i for i, m in enumerate(messages) if m.role != "system"]
    if not turns:
        raise ApiError(
            400,
            "messages hold no user message: a system message only adds to the system prompt",
            param=f"messages.{len(messages) - 1}.role",
        )
    if messages[turns[-1]].role == "assistant":
        raise ApiError(
            400,
            "the last message must be the user's: continuing an assistant message (a prefill)"
            " is not supported here",
            param=f"messages.{turns[-1]}.role",
        )


BILLING = "x-anthropic-billing-header:"


def steady(text: str) -> str:
    """`text` with Claude Code's billing line made the same on every request: it starts the
    system prompt with a checksum of the request (`cch=` and five characters, then `;`) that
    would change the prompt's first tokens each turn, so no cached prompt would ever be reused;
    the checksum is written `fffff`, as llama-server does (any other text is left as it is)."""
    if not text.startswith(BILLING):
        return text
    at = text.find("cch=", len(BILLING)) + len("cch=")
    if at < len("cch=") or text[at + 5 : at + 6] != ";":
        return text
    return f"{text[:at]}fffff{text[at + 5 :]}"


def _system_prompt(request: CountRequest) -> str:
    """The request's `system`, each text block's billing line made steady."""
    system = request.system or ""
    if isinstance(system, str):
        return steady(system)
    _text(list(enumerate(system)), "system")  # (a block other than text: a 400 naming it)
    return "".join(steady(b.text) for b in system if isinstance(b, TextBlock))


def _transcript(request: CountRequest, target: Target) -> Transcript:
    transcript = Transcript()
    transcript.instruct(_system_prompt(request))
    for i, m in enumerate(request.messages):
        if m.role == "system":
            transcript.instruct(_system(m, i))
        elif m.role == "user":
            _user(m, i, transcript, target)
        else:
            _assistant(m, i, transcript)
    _check_last(request.messages)
    return transcript


def _tools(request: CountRequest) -> list[ToolDescription]:
    if request.mcp_servers:
        raise ApiError(
            400,
            "MCP servers are not supported here: this server connects to none; give their tools"
            " as client tools (name, input_schema) and run them yourself",
            param="mcp_servers",
            code="unsupported_tool",
        )
    for i, t in enumerate(request.tools or ()):
        if t.type not in (None, "custom") or t.input_schema is None:
            raise ApiError(
                400,
                f"tool {t.name!r} is a server tool ({t.type}) or has no input_schema: only"
                " client tools with an input_schema are supported here",
                param=f"tools.{i}",
                code="unsupported_tool",
            )
        check_schema(t.input_schema, f"tools.{i}.input_schema")
    return [
        ToolDescription(name=t.name, description=t.description, parameters=t.input_schema)
        for t in request.tools or ()
    ]


def _choice(choice: ToolChoiceParam | None) -> ToolChoice:
    if choice is None:
        return "auto"
    if choice.type in ("auto", "none"):
        return choice.type
    if choice.type == "any":
        return "required"
    if choice.name is not None:
        return choice.name
    raise ApiError(
        400, "tool_choice is {type: auto | any | none} or {type: tool, name}", param="tool_choice"
    )


def _schema(config: OutputConfig | None) -> dict[str, object] | None:
    """`output_config.format` as the JSON-schema format the answer must match, not yet
    validated (None: the answer is free)."""
    form = config.format if config is not None else None
    if form is None:
        return None
    if form.get("type") != "json_schema" or "schema" not in form:
        raise ApiError(
            400, "output_config.format is {type: json_schema, schema}", param="output_config.format"
        )
    check_schema(form["schema"], "output_config.format.schema")
    return {"name": "output", "schema": form["schema"]}


def _format(given: dict[str, object] | None) -> ResponseFormat | None:
    if given is None:
        return None
    spec = validated(JsonSchemaFormat, given, "output_config.format")
    return ResponseFormat(type="json_schema", json_schema=spec)


def _effort(config: OutputConfig | None) -> str | None:
    """`output_config.effort`, at most high (xhigh and max are high here)."""
    effort = config.effort if config is not None else None
    return "high" if effort in ("xhigh", "max") else effort


def asked(request: CountRequest, target: Target) -> Asked:
    """The conversation and the one `GenerationRequest` the request asks for (a
    `count_tokens` request: as a message with the server's most tokens)."""
    transcript = _transcript(request, target)
    declared = _tools(request)
    choice = _choice(request.tool_choice)
    schema = _schema(request.output_config)
    tools, dropped = target.callable(declared, choice)
    effort, unapplied = target.effort(_effort(request.output_config), "output_config.effort")
    thinking = request.thinking
    budget = thinking.budget_tokens if request.thinks and thinking is not None else None
    sampling, wanted, stop = SamplingAsk(), None, None  # `count_tokens`: none of these
    if isinstance(request, MessagesRequest):
        sampling = SamplingAsk(
            temperature=request.temperature, top_p=request.top_p, top_k=request.top_k
        )
        wanted, stop = request.max_tokens, request.stop_sequences
    with checked():
        generation = GenerationRequest(
            max_tokens=target.max_tokens(wanted),
            tenant=target.tenant,
            tool_choice=choice,
            tools={t.name: t.parameters for t in tools},
            response_format=_format(schema),
            effort=effort,
            overflow=target.overflow(None),  # the Messages API names no policy
            sampling=sampling,
            stops=stops_of(stop, "stop_sequences"),
            thinking_budget=budget or target.thinking_budget,
        )
    ignored = (*request.ignored(), *dropped, *unapplied)
    return Asked(transcript.conversation(tools), generation, ignored, target.clamped(wanted))


__all__ = ["asked"]
