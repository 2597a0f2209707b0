"""A Responses API request as the app's own `Asked`, converted straight from its input items.

Guarantees: `instructions` and `system`/`developer` messages become the developer instructions;
messages, `function_call` and `custom_tool_call` items (one assistant turn for calls side by side; a
custom tool's `input` as the one string argument it is offered with, a namespaced call under its
flattened name: `tools`) and their `function_call_output` and `custom_tool_call_output` items
(paired by `call_id`) become the shared conversation (`app/server/transcript.py`), a `reasoning`
item's text (its `content`, else its `summary`) kept before the calls that follow it — its
`encrypted_content`, which only OpenAI can read, is not applied and said so; a message's
`input_image` parts (a `data:` URL in `image_url`) become its images in their place among its text,
checked and held for the engine; the tools as `tools.offered` offers them (functions, custom tools,
namespaces), `tool_choice` (a `{"type": "custom", "name": ...}` forces that custom tool as a named
function is forced), `reasoning.effort` (one the template has no word for as the nearest it has:
`chat.effort`), `text.format`, `max_output_tokens`, `temperature`, `top_p` and `truncation` ("auto":
drop-middle, "disabled": stop; not given: the server's policy, summarise under `--compact`) become
the one `GenerationRequest` under the rules every API shares (`app/server/asked.py`); a prompt too
long is refused naming `input`. A tool of a type the API defines but this server does not run
(`web_search`, `mcp`, ...: `wire.HOSTED`) is left out of the prompt and named in the warning header,
never dropped silently, as a custom tool's grammar that is described to the model but not enforced
is noted there; a `tool_choice` that forces a hosted tool (by its type, or `required` when no
function is left) is a 400 that says so. Every problem is a 400 naming the field as this API spells
it (`input.I.content.J`, `tools.I.name`, `text.format.schema`, `max_output_tokens`): a field that
needs state this server does not keep (`previous_response_id`, ...: `wire.STATEFUL`), an image by
`file_id` (this server keeps no files), an image in any message but a user's, an image to a model
that reads text only, an `input_file` or `input_audio` part, a tool of a type the API does not have,
an item type it does not know, content of a wrong type (a number, a boolean), or a schema nested too
deep (`intake.check_schema`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from app.constrain.constraint import JsonSchemaFormat, ResponseFormat, ToolChoice
from app.domain.budget import Overflow
from app.domain.messages import ImageContent
from app.engine.request import GenerationRequest, SamplingAsk
from app.server.asked import Asked, Target, checked, choice_named, choice_word
from app.server.chat.effort import OpenAIEffort, nearest
from app.server.errors import ApiError, validated
from app.server.intake import check_schema
from app.server.pictures import image_of, no_files
from app.server.responses import tools
from app.server.responses.wire import (
    HOSTED,
    NOT_TEXT,
    CustomCallItem,
    FunctionCallItem,
    FunctionOutputItem,
    ResponsesRequest,
)
from app.server.transcript import Call, Transcript

ROLES = ("system", "developer", "user", "assistant", "tool")


def _text(content: Any, param: str) -> str:
    """The text of an item's content: a string, or parts with text (a 400 naming `param` for
    any other type)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ApiError(
            400,
            f"{param} must be a string or a list of parts, not {type(content).__name__}",
            param=param,
            code="invalid_value",
        )
    texts = [p.get("text", "") for p in content if isinstance(p, dict)]
    for j, text in enumerate(texts):
        if not isinstance(text, str):
            raise ApiError(400, f"{param}.{j}.text must be a string", param=f"{param}.{j}.text")
    return "".join(texts)


def _part(part: dict[str, Any], param: str, role: str, target: Target) -> str | ImageContent:
    """One content part of a message with images: its text, or its picture (decoded here)."""
    kind = part.get("type")
    if kind == "input_image":
        if part.get("image_url") is None and part.get("file_id") is not None:
            raise no_files(param)
        if role != "user":
            said = f"image parts are taken in user messages only, not in {role} messages"
            raise ApiError(400, said, param=param, code="unsupported_content")
        target.seeing(param, "image parts")
        return image_of(part.get("image_url"), param)
    if kind in NOT_TEXT:
        raise ApiError(
            400,
            f"content parts of type {kind!r} are not supported: this server reads text and"
            " input_image parts",
            param=param,
            code="unsupported_content",
        )
    text = part.get("text", "")
    if not isinstance(text, str):
        raise ApiError(400, f"{param}.text must be a string", param=f"{param}.text")
    return text


class _Reading:
    """The input items read into a transcript, one by one (see the module guarantees)."""

    def __init__(self, target: Target) -> None:
        self.target, self.transcript = target, Transcript()
        self.reasoning = ""  # kept for the calls that follow
        self.calling = False  # the last message is an assistant's calls
        self.details = False  # an image asked for a detail that is not applied
        self.encrypted = False  # a reasoning item came encrypted (not applied)

    def message(self, item: dict[str, Any], i: int) -> None:
        role, content, param = item.get("role", "user"), item.get("content"), f"input.{i}.content"
        if role not in ROLES:
            said = f"Input should be {', '.join(map(repr, ROLES[:-1]))} or {ROLES[-1]!r}"
            raise ApiError(
                400, f"input.{i}.role: {said}", param=f"input.{i}.role", code="invalid_value"
            )
        parts = content if isinstance(content, list) else []
        if any(isinstance(p, dict) and p.get("type") in NOT_TEXT for p in parts):
            read = [
                _part(p, f"{param}.{j}", role, self.target)
                for j, p in enumerate(parts)
                if isinstance(p, dict)
            ]
            self.details |= any(
                p.get("type") == "input_image" and p.get("detail", "auto") not in (None, "auto")
                for p in parts
                if isinstance(p, dict)
            )
            self.transcript.user(read)  # images are taken in a user's message only
        else:
            self._said(role, _text(content, param))
        self.calling = False

    def _said(self, role: str, text: str) -> None:
        t = self.transcript
        if role in ("system", "developer"):
            t.instruct(text)
        elif role == "user":
            t.user([text])
        elif role == "assistant":
            t.assistant(text)
        else:
            t.tool("", text)

    def ignored(self) -> tuple[str, ...]:
        """What the input asked that is not applied."""
        details = ("input_image.detail",) if self.details else ()
        return (*details, *(("encrypted_content of reasoning items",) if self.encrypted else ()))

    def _called(self, call: Call) -> None:
        self.transcript.assistant("", "" if self.calling else self.reasoning, [call])
        self.reasoning, self.calling = "", True

    def item(self, item: dict[str, Any], i: int) -> None:
        kind = item.get("type", "message")
        if kind == "message":
            self.message(item, i)
        elif kind == "reasoning":
            self.reasoning += _text(item.get("content"), f"input.{i}.content") or _text(
                item.get("summary"), f"input.{i}.summary"
            )
            self.encrypted |= item.get("encrypted_content") is not None
        elif kind == "function_call":
            call = validated(FunctionCallItem, item, f"input.{i}")
            self._called(Call(call.call_id, tools.flat(call.namespace, call.name), call.arguments))
        elif kind == "custom_tool_call":
            custom = validated(CustomCallItem, item, f"input.{i}")
            name = tools.flat(custom.namespace, custom.name)
            self._called(Call(custom.call_id, name, tools.arguments_of(custom.input)))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = _text(item.get("output"), f"input.{i}.output")
            call_id = validated(FunctionOutputItem, item, f"input.{i}").call_id
            self.transcript.tool(call_id or "", output)
            self.calling = False
        else:
            raise ApiError(
                400, f"input items of type {kind!r} are not supported", param=f"input.{i}.type"
            )


def check_schemas(request: ResponsesRequest) -> None:
    form = (request.text or {}).get("format")
    if isinstance(form, dict):
        check_schema(form.get("schema"), "text.format.schema")
    tools.check_schemas(request.tools)


def _unrun(said: str) -> ApiError:
    return ApiError(
        400,
        f"{said}, which this server does not run: only function and custom tools are called",
        param="tool_choice",
        code="unsupported_tool",
    )


def _choice(
    choice: str | dict[str, Any] | None, functions: int, left_out: Sequence[str]
) -> ToolChoice:
    """The choice asked; one that forces a tool left out is a 400 (see the guarantees)."""
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        if choice == "required" and left_out and not functions:
            raise _unrun(f'tool_choice "required" forces a call to a {" or ".join(left_out)}')
        return choice_word(choice)
    kind = choice.get("type")
    if kind in HOSTED:
        raise _unrun(f"tool_choice forces a {kind} tool")
    return choice_named(choice.get("name"))


def _effort(request: ResponsesRequest) -> str | None:
    effort = request.effort
    if effort is None or effort == "":  # an empty list or object is a wrong value: a 400
        return None
    if effort not in get_args(OpenAIEffort):
        said = f"Input should be one of {', '.join(map(repr, get_args(OpenAIEffort)))}"
        raise ApiError(
            400, f"reasoning.effort: {said}", param="reasoning.effort", code="invalid_value"
        )
    return str(effort)


def _stateless(request: ResponsesRequest) -> None:
    """A 400 for a field whose meaning needs state this server does not keep."""
    refused = request.stateless()
    if refused is not None:
        field, why = refused
        raise ApiError(
            400,
            f"{field} is not supported: {why}; send the whole conversation as input",
            param=field,
            code="unsupported_parameter",
        )


def _format(request: ResponsesRequest) -> ResponseFormat | None:
    form = (request.text or {}).get("format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        given = {"name": form.get("name", "response"), "schema": form.get("schema", {})}
        if form.get("strict") is not None:
            given["strict"] = form["strict"]
        spec = validated(JsonSchemaFormat, given, "text.format")
        return ResponseFormat(type="json_schema", json_schema=spec)
    if isinstance(form, dict) and form.get("type") == "json_object":
        return ResponseFormat(type="json_object")
    return None


def asked(request: ResponsesRequest, target: Target) -> Asked:
    """The conversation and the one `GenerationRequest` the request asks for (see the
    module guarantees)."""
    _stateless(request)
    check_schemas(request)
    reading = _Reading(target)
    reading.transcript.instruct(request.instructions or "")
    for i, item in enumerate(request.items):
        reading.item(item, i)
    declared, effort_asked = tools.offered(request.tools), _effort(request)
    left_out = declared.left_out
    choice = _choice(request.tool_choice, len(declared.functions), left_out)
    functions, dropped = target.callable(declared.functions, choice)
    effort, unapplied = target.effort(nearest(effort_asked), "reasoning.effort")
    max_tokens = target.max_tokens(request.max_output_tokens, "max_output_tokens")
    response_format = _format(request)
    with checked():
        generation = GenerationRequest(
            max_tokens=max_tokens,
            tenant=target.tenant,
            tool_choice=choice,
            tools={t.name: t.parameters for t in functions},
            response_format=response_format,
            effort=effort,
            overflow=target.overflow(_policy(request)),
            sampling=SamplingAsk(temperature=request.temperature, top_p=request.top_p),
            thinking_budget=target.thinking_budget,
        )
    conversation = reading.transcript.conversation(functions)
    ignored = (*request.ignored(), *reading.ignored(), *left_out, *dropped, *unapplied)
    clamped = target.clamped(request.max_output_tokens, "max_output_tokens")
    described = declared.notes if functions else ()  # none when the tools are left out
    notes = (*clamped, *described)
    return Asked(conversation, generation, ignored, notes, "input", '"truncation": "auto"')


def _policy(request: ResponsesRequest) -> Overflow | None:
    """The overflow policy `truncation` asks for (None: it says nothing)."""
    if request.truncation is None:
        return None
    return Overflow.DROP_MIDDLE if request.truncation == "auto" else Overflow.STOP


__all__ = ["asked", "check_schemas"]
