"""The OpenAI request shapes the server accepts, and its errors in OpenAI's shape.

Guarantees: a request body is validated before anything runs — a field the API does not have
is a 400 naming it (`code: "unknown_field"`), a value out of range is a 400 naming the field;
messages are read leniently (clients send back what they received, with fields of their own);
every error the server returns is `{"error": {"message", "type", "param", "code"}}` with the
status that says whose fault it is. A chat request's overflow policy is its `overflow` field
(stop, drop-middle, rolling), else Databricks' `error_behavior` ("truncate" is drop-middle:
the instructions, the tools and the first exchange stay, as OpenAI's `truncation: "auto"` drops
from the middle), else stop.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.domain.budget import Overflow, OverflowName
from app.errors import HarmonyDeskError


class ApiError(HarmonyDeskError):
    """An error answered in OpenAI's shape: its HTTP status, type, the field at fault and its
    code (OpenAI's string codes, `error_code` here)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.type, self.param, self.error_code = status, type, param, code

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.error_code,
            }
        }


def refused(exc: ValidationError) -> ApiError:
    """The first problem of a request body, as a 400 that names the field."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return ApiError(400, f"unknown field {where!r}", param=where, code="unknown_field")
    return ApiError(400, f"{where}: {first['msg']}", param=where or None, code="invalid_value")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(_Lenient):
    name: str
    arguments: str = "{}"


class ToolCall(_Lenient):
    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None

    @property
    def images(self) -> int:
        """How many image parts the content has."""
        parts = self.content if isinstance(self.content, list) else ()
        return sum(1 for p in parts if p.get("type") == "image_url")

    @property
    def text(self) -> str:
        """The text of the content (text parts joined; images are read apart, other parts are
        refused earlier)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content or ())


class FunctionSpec(_Lenient):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolSpec(_Lenient):
    type: Literal["function"] = "function"
    function: FunctionSpec


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_usage: bool = False


Effort = Literal["low", "medium", "high"]
ReasoningField = Literal["reasoning_content", "reasoning"]


MAX_CHOICES = 8  # a chat request's `n` at most


class Sampled(BaseModel):
    """The sampling and length fields chat completions and completions share."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # any name (one model is served); null as llama-server's clients send
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    min_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = Field(None, ge=0)
    stop: str | list[str] | None = None
    n: int = Field(1, ge=1, le=1, description="one choice per request")
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    user: str | None = None
    metadata: dict[str, Any] | None = None
    store: bool | None = None

    def ignored(self) -> list[str]:
        """The fields given that this server does not apply (said in a warning header)."""
        unapplied = ("presence_penalty", "frequency_penalty", "logit_bias", "suffix")
        return [f for f in unapplied if getattr(self, f, None)]

    @property
    def stops(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or ())
        if len(stops) > 4:
            raise ApiError(400, "at most 4 stop sequences", param="stop")
        return [s for s in stops if s]


class ChatRequest(Sampled):
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1, le=MAX_CHOICES, description="choices, decoded side by side")
    tools: list[ToolSpec] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: Effort | None = None
    reasoning_format: ReasoningField | None = None  # ours: where the reasoning is returned
    thinking_budget: int | None = Field(None, ge=1)  # ours: tokens per reasoning message (gpt-oss)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    overflow: OverflowName | None = None  # ours: what a prompt that outgrows the context does
    error_behavior: Literal["error", "truncate"] | None = None  # Databricks' word for it

    @property
    def has_images(self) -> bool:
        return any(m.images for m in self.messages)

    @property
    def policy(self) -> Overflow:
        """The overflow policy asked for: `overflow` when given, else Databricks'
        `error_behavior` ("truncate": drop the middle, "error": stop), else stop."""
        if self.overflow is not None:
            return Overflow(self.overflow)
        return Overflow.DROP_MIDDLE if self.error_behavior == "truncate" else Overflow.STOP


class CompletionRequest(Sampled):
    prompt: str | list[str]
    echo: bool = False
    suffix: str | None = None
    logprobs: int | None = Field(None, ge=0, le=20)
    best_of: int | None = Field(None, ge=1, le=1)


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = ""
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = None
    user: str | None = None


def parse(model: type[BaseModel], body: Any) -> Any:
    """`body` as `model`, or the 400 that says what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise refused(exc) from None


__all__ = [
    "ApiError",
    "ChatMessage",
    "ChatRequest",
    "CompletionRequest",
    "EmbeddingRequest",
    "ReasoningField",
    "Sampled",
    "ToolSpec",
    "parse",
    "refused",
]
