"""A chat request as the app's own conversation, and what the model may do in answer.

Guarantees: the same conversation for every template — `system` and `developer` messages
become the developer instructions; an assistant message the client sends back keeps its tool
calls (call messages to `functions.NAME`, paired with their results by id) and its reasoning
only before tool calls, so analysis after a final answer is never rendered (a template that
shows no reasoning leaves it out); tools become the developer message's `functions`; every knob
becomes one `GenerationRequest`, checked once as it is built (a `tool_choice` naming a tool
that is not declared is its 400), and the session makes the grammar from it. A model whose
template has no tool-call format refuses `tools` with a 400 that names it, unless `tool_choice`
is `none` (then the tools are left out, said in the warning header, and the answer is plain
text); `reasoning_effort` is asked
where the template takes one and reported as ignored otherwise; `tool_choice`,
`response_format` and an unsupported schema keyword are honoured or refused with a 400 that
names the field. A user message's `image_url` parts (`data:` URLs only: `app/server/pictures.py`)
become its images, in the parts' order among its text (text parts side by side are joined),
each checked and held for the engine; an image in any other role's message, an image to a model
that reads text only, and any other non-text part are refused with a 400 naming the part
(`places` renames a part as the client's own API spells it), never dropped silently; an image's
`detail` is not applied (the projector reads the picture at its own size) and says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from app.constrain.constraint import ResponseFormat, ToolChoice
from app.domain.messages import (
    Author,
    Conversation,
    DeveloperContent,
    ImageContent,
    Message,
    ReasoningEffort,
    Role,
    TextContent,
    ToolDescription,
)
from app.engine.request import GenerationRequest, SamplingAsk
from app.errors import RequestError
from app.server.intake import check_schema
from app.server.pictures import image_of, text_only, url_of
from app.server.wire import ApiError, ChatMessage, ChatRequest, Sampled
from app.templates.base import Template

CALL_TYPE = "<|constrain|>json"
TEXT_PARTS = ("text", "input_text", "output_text")


@dataclass(frozen=True)
class Asked:
    """What one request asks of the model: the conversation, and how to generate its answer."""

    conversation: Conversation
    generation: GenerationRequest
    ignored: tuple[str, ...] = ()  # fields given that this model does not apply


def _developer(request: ChatRequest) -> DeveloperContent | None:
    instructions = "\n\n".join(
        m.text for m in request.messages if m.role in ("system", "developer") and m.text
    )
    functions = [
        ToolDescription(
            name=t.function.name,
            description=t.function.description,
            parameters=t.function.parameters,
        )
        for t in request.tools or ()
    ]
    if not instructions and not functions:
        return None
    developer = DeveloperContent(instructions=instructions or None)
    return developer.with_function_tools(functions) if functions else developer


def _assistant(m: ChatMessage) -> list[Message]:
    reasoning = m.reasoning_content or m.reasoning or ""
    out = []
    if reasoning and m.tool_calls:  # kept across a tool-call chain only
        out.append(Message.of(Role.ASSISTANT, reasoning, channel="analysis"))
    if m.tool_calls:
        if m.text:
            out.append(Message.of(Role.ASSISTANT, m.text, channel="commentary"))
        for call in m.tool_calls:
            out.append(
                Message.of(
                    Role.ASSISTANT,
                    call.function.arguments,
                    channel="commentary",
                    recipient=f"functions.{call.function.name}",
                    content_type=CALL_TYPE,
                )
            )
    elif m.text or not out:
        out.append(Message.of(Role.ASSISTANT, m.text, channel="final"))
    return out


@dataclass(frozen=True)
class Seeing:
    """What the served model makes of images: whether it sees them (a projector is loaded),
    its name (for errors), and the client's own names of the parts (`messages.I.content.J` →
    the field as the client's API spells it, for a request read from another API)."""

    sees: bool = False
    model: str = "this model"
    places: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def param(self, i: int, j: int) -> str:
        where = f"messages.{i}.content.{j}"
        return self.places.get(where, where)


def _check_parts(request: ChatRequest, seeing: Seeing) -> None:
    for i, m in enumerate(request.messages):
        for j, part in enumerate(m.content if isinstance(m.content, list) else ()):
            kind = part.get("type")
            if kind in TEXT_PARTS:
                continue
            if kind == "image_url" and m.role == "user":
                if not seeing.sees:
                    raise text_only(seeing.model, seeing.param(i, j), "image parts")
                continue
            said = (
                f"image parts are taken in user messages only, not in {m.role} messages"
                if kind == "image_url"
                else f"content parts of type {kind!r} are not supported: this server reads text"
                " and image_url parts"
            )
            raise ApiError(400, said, param=seeing.param(i, j), code="unsupported_content")


def _user(m: ChatMessage, i: int, seeing: Seeing) -> Message:
    """A user message: its text, with its images (decoded here) in the parts' order."""
    parts = m.content if isinstance(m.content, list) else []
    if not any(p.get("type") == "image_url" for p in parts):
        return Message.of(Role.USER, m.text)
    content: list[TextContent | ImageContent] = []
    for j, part in enumerate(parts):
        if part.get("type") == "image_url":
            content.append(image_of(url_of(part), seeing.param(i, j)))
        elif content and isinstance(content[-1], TextContent):
            content[-1] = TextContent(text=content[-1].text + str(part.get("text", "")))
        else:
            content.append(TextContent(text=str(part.get("text", ""))))
    kept = tuple(c for c in content if not isinstance(c, TextContent) or c.text)
    return Message(author=Author(role=Role.USER), content=kept)


def _details(request: ChatRequest) -> tuple[str, ...]:
    """`image_url.detail` when a part asks for a detail other than `auto` (not applied)."""
    for m in request.messages:
        for part in m.content if isinstance(m.content, list) else ():
            image = part.get("image_url")
            if isinstance(image, dict) and image.get("detail") not in (None, "auto"):
                return ("image_url.detail",)
    return ()


def conversation_of(request: ChatRequest, seeing: Seeing | None = None) -> Conversation:
    """The request's messages as a conversation (see the module guarantees)."""
    seeing = seeing or Seeing()
    _check_parts(request, seeing)
    messages: list[Message] = []
    developer = _developer(request)
    if developer is not None:
        messages.append(Message.of(Role.DEVELOPER, developer))
    names: dict[str, str] = {}  # tool_call_id → function name
    for i, m in enumerate(request.messages):
        if m.role == "user":
            messages.append(_user(m, i, seeing))
        elif m.role == "assistant":
            names.update({c.id: c.function.name for c in m.tool_calls or () if c.id})
            messages += _assistant(m)
        elif m.role == "tool":
            name = names.get(m.tool_call_id or "", m.name or "tool")
            messages.append(
                Message(
                    author=Author(role=Role.TOOL, name=f"functions.{name}"),
                    content=(TextContent(text=m.text),),
                    channel="commentary",
                    recipient="assistant",
                )
            )
    return Conversation(messages=tuple(messages))


def _choice(request: ChatRequest) -> ToolChoice:
    choice = request.tool_choice
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise ApiError(
                400, f"tool_choice {choice!r} is not auto, none or required", param="tool_choice"
            )
        return choice
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if choice.get("type") != "function" or not isinstance(name, str):
        raise ApiError(400, "tool_choice must name a function", param="tool_choice")
    return name


def response_format_of(raw: dict[str, Any] | None) -> ResponseFormat | None:
    if raw is None:
        return None
    try:
        return ResponseFormat.model_validate(raw)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise ApiError(
            400,
            f"response_format is not valid: {where}: {exc.errors()[0]['msg']}",
            param="response_format",
        ) from None


def _check_schemas(request: ChatRequest) -> None:
    spec = (request.response_format or {}).get("json_schema")
    if isinstance(spec, dict):
        check_schema(spec.get("schema"), "response_format.json_schema.schema")
    for i, tool in enumerate(request.tools or ()):
        check_schema(tool.function.parameters, f"tools.{i}.function.parameters")


def asked(
    request: ChatRequest,
    template: Template,
    model: str,
    limit: int,
    thinking_budget: int | None = None,
    seeing: Seeing | None = None,
) -> Asked:
    """The conversation for `template` and the one `GenerationRequest` that answers it, built
    and checked here (see the guarantees); `model` is the served model's name, for errors;
    `limit` the server's most tokens for an answer; `seeing` says whether it sees images
    (None: it reads text only)."""
    _check_schemas(request)
    choice = _choice(request)
    ignored: tuple[str, ...] = _details(request)
    if request.tools and template.tool_calls is None:
        if choice != "none":
            raise ApiError(
                400,
                f"{model} cannot call tools: its chat template ({template.name}) has no tool-call"
                ' format (with "tool_choice": "none" the tools are ignored)',
                param="tools",
                code="unsupported_parameter",
            )
        request = request.model_copy(update={"tools": None})  # none may be called: a plain answer
        ignored = (*ignored, "tools")
    seeing = dataclasses.replace(seeing or Seeing(), model=model)
    conversation = conversation_of(request, seeing)
    effort = None
    if request.reasoning_effort is not None:
        if template.takes_effort:
            effort = ReasoningEffort(request.reasoning_effort)
        else:
            ignored = (*ignored, "reasoning_effort")
    top = (request.top_logprobs or 0) if request.logprobs else 0
    try:
        generation = GenerationRequest(
            max_tokens=max_tokens_of(request, limit),
            tool_choice=choice,
            tools={t.function.name: t.function.parameters for t in request.tools or ()},
            response_format=response_format_of(request.response_format),
            effort=effort,
            overflow=request.policy,
            sampling=sampling_of(request),
            stops=tuple(request.stops),
            top_logprobs=max(top, 1) if request.logprobs else 0,
            thinking_budget=request.thinking_budget or thinking_budget,
        )
    except RequestError as exc:
        raise ApiError(400, exc.message, param=exc.field) from None
    return Asked(conversation, generation, ignored)


def sampling_of(request: Sampled) -> SamplingAsk:
    """What the request changes of the model's sampling."""
    return SamplingAsk(
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k,
        min_p=request.min_p,
        seed=request.seed,
    )


def max_tokens_of(request: Sampled, limit: int) -> int:
    """The answer's budget: what the request asks, at most the server's `limit` (a 400 over
    it), else the limit."""
    asked = request.max_completion_tokens or request.max_tokens
    if asked is not None and asked > limit:
        raise ApiError(
            400,
            f"max_tokens {asked} is over this server's limit of {limit}",
            param="max_tokens",
            code="max_tokens_too_large",
        )
    return asked or limit


__all__ = [
    "Asked",
    "Seeing",
    "asked",
    "conversation_of",
    "max_tokens_of",
    "response_format_of",
    "sampling_of",
]
