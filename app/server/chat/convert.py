"""A chat-completions request as the app's own `Asked`: its conversation, and what the model may
do in answer.

Guarantees: the messages become the shared conversation (`app/server/transcript.py`): `system`
and `developer` messages the developer instructions, an assistant message the client sends back
its tool calls (paired with their results by id) and its reasoning before calls only; tools
become the developer message's `functions`; every knob becomes one `GenerationRequest`, checked
once as it is built (`app/server/asked.py`: the rules all APIs share), and the session makes the
grammar from it; `tool_choice`, `response_format` and an unsupported schema keyword are honoured
or refused with a 400 that names the field. A user message's `image_url` parts (`data:` URLs
only: `app/server/pictures.py`) become its images, in the parts' order among its text, each
checked and held for the engine; an image in any other role's message, an image to a model
that reads text only, and any other non-text part are refused with a 400 naming the part
(`messages.I.content.J`), never dropped silently; an image's `detail` is not applied (the
projector reads the picture at its own size) and says so. A reasoning effort the template has
no word for is asked as its nearest (`effort.nearest`); audio out (`modalities` with "audio",
or `audio`) is a 400 naming the field: this server answers in text.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from app.constrain.constraint import ResponseFormat, ToolChoice
from app.domain.messages import Conversation, ImageContent, ToolDescription
from app.engine.request import GenerationRequest
from app.server.asked import Asked, Target, checked, choice_named, choice_word
from app.server.chat.effort import nearest
from app.server.chat.wire import ChatMessage, ChatRequest
from app.server.errors import ApiError
from app.server.intake import check_schema
from app.server.pictures import image_of, url_of
from app.server.sampled import sampling_of
from app.server.transcript import Call, Transcript

TEXT_PARTS = ("text", "input_text", "output_text")


def _check_parts(request: ChatRequest, target: Target) -> None:
    for i, m in enumerate(request.messages):
        for j, part in enumerate(m.parts):
            kind, param = part.get("type"), f"messages.{i}.content.{j}"
            if kind in TEXT_PARTS:
                continue
            if kind == "image_url" and m.role == "user":
                target.seeing(param, "image parts")
                continue
            said = (
                f"image parts are taken in user messages only, not in {m.role} messages"
                if kind == "image_url"
                else f"content parts of type {kind!r} are not supported: this server reads text"
                " and image_url parts"
            )
            raise ApiError(400, said, param=param, code="unsupported_content")


def _user(m: ChatMessage, i: int) -> list[str | ImageContent]:
    """A user message's text and images (decoded here), in the parts' order."""
    if not m.images:
        return [m.text]
    return [
        image_of(url_of(part), f"messages.{i}.content.{j}")
        if part.get("type") == "image_url"
        else str(part.get("text", ""))
        for j, part in enumerate(m.parts)
    ]


def _details(request: ChatRequest) -> tuple[str, ...]:
    """`image_url.detail` when a part asks for a detail other than `auto` (not applied)."""
    for m in request.messages:
        for part in m.parts:
            image = part.get("image_url")
            if isinstance(image, dict) and image.get("detail") not in (None, "auto"):
                return ("image_url.detail",)
    return ()


def conversation_of(
    request: ChatRequest, target: Target, tools: Sequence[ToolDescription] = ()
) -> Conversation:
    """The request's messages as a conversation declaring `tools` (see the guarantees)."""
    _check_parts(request, target)
    transcript = Transcript()
    for i, m in enumerate(request.messages):
        if m.role in ("system", "developer"):
            transcript.instruct(m.text)
        elif m.role == "user":
            transcript.user(_user(m, i))
        elif m.role == "assistant":
            calls = [Call(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or ()]
            transcript.assistant(m.text, m.reasoning_content or m.reasoning or "", calls)
        else:
            transcript.tool(m.tool_call_id or "", m.text, m.name)
    return transcript.conversation(tools)


def _choice(request: ChatRequest) -> ToolChoice:
    choice = request.tool_choice
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return choice_word(choice)
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return choice_named(name if choice.get("type") == "function" else None)


def response_format_of(raw: dict[str, object] | None) -> ResponseFormat | None:
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


def _check_text_out(request: ChatRequest) -> None:
    """A 400 for audio out: this server answers in text only."""
    said = "this server answers in text only"
    if "audio" in (request.modalities or ()):
        raise ApiError(
            400, f'{said}: modalities may be ["text"]', param="modalities", code="unsupported_value"
        )
    if request.audio is not None:
        raise ApiError(400, f"{said}: no audio", param="audio", code="unsupported_parameter")


def _check_schemas(request: ChatRequest) -> None:
    spec = (request.response_format or {}).get("json_schema")
    if isinstance(spec, dict):
        check_schema(spec.get("schema"), "response_format.json_schema.schema")
    for i, tool in enumerate(request.tools or ()):
        check_schema(tool.function.parameters, f"tools.{i}.function.parameters")


FITS_BY = '"overflow": "drop-middle" or "rolling" (or "error_behavior": "truncate")'


def asked(request: ChatRequest, target: Target) -> Asked:
    """The conversation for the served model and the one `GenerationRequest` that answers it,
    built and checked here (see the guarantees)."""
    _check_text_out(request)
    _check_schemas(request)
    choice = _choice(request)
    declared = [
        ToolDescription(
            name=t.function.name,
            description=t.function.description,
            parameters=t.function.parameters,
        )
        for t in request.tools or ()
    ]
    tools, dropped = target.callable(declared, choice)
    conversation = conversation_of(request, target, tools)
    effort, unapplied = target.effort(nearest(request.reasoning_effort))
    top = (request.top_logprobs or 0) if request.logprobs else 0
    with checked():
        generation = GenerationRequest(
            max_tokens=target.max_tokens(request.budget),
            tenant=target.tenant,
            tool_choice=choice,
            tools={t.name: t.parameters for t in tools},
            response_format=response_format_of(request.response_format),
            effort=effort,
            overflow=target.overflow(request.policy if request.asks_policy else None),
            sampling=sampling_of(request),
            stops=request.stops,
            top_logprobs=max(top, 1) if request.logprobs else 0,
            thinking_budget=request.thinking_budget or target.thinking_budget,
        )
    ignored = (*request.ignored(), *_details(request), *dropped, *unapplied)
    notes = target.clamped(request.budget)
    return Asked(conversation, generation, ignored, notes, fits_by=FITS_BY)


__all__ = ["asked", "conversation_of", "response_format_of"]
