"""The server's error, as every API answers it, and a request body read into its wire model.

Guarantees: an `ApiError` carries its HTTP status, type, the field at fault (`param`, spelled
as the client's own API spells it) and its code; its default body is OpenAI's
`{"error": {"message", "type", "param", "code"}}` (an API with a shape of its own writes it from
the same error: `app/server/routing.py`). A body is validated before anything runs — a field
its API does not have is a 400 naming it (`code: "unknown_field"`), a value out of range or of
the wrong type a 400 naming the field (`code: "invalid_value"`), a body that is no JSON object
a 400 that says so. A prompt the context cannot hold is a `ContextTooLong`: a 400
`context_length_exceeded` whose message says the counts as OpenAI's does ("This model's maximum
context length is N tokens. However, ...") and, for Anthropic's Messages API, as Anthropic's
does ("prompt is too long: M tokens > N maximum", which Claude Code's auto-compact reads); what
would make it fit follows those words, never before them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.errors import HarmonyDeskError

Model = TypeVar("Model", bound=BaseModel)


class ApiError(HarmonyDeskError):
    """An error answered with its HTTP status, type, the field at fault and its code (OpenAI's
    string codes, `error_code` here)."""

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
        """The error in OpenAI's shape."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.error_code,
            }
        }


class ContextTooLong(ApiError):
    """A prompt the context cannot hold: `prompt` tokens, `n_ctx` the context, `completion`
    the tokens held for the answer; `hint`: what would make it fit (see the module
    guarantees). `param` is the field that holds the prompt, as the client's API spells it
    (`prompt`: the completions API, with OpenAI's wording for it)."""

    def __init__(
        self, prompt: int, n_ctx: int, completion: int, *, param: str = "messages", hint: str = ""
    ) -> None:
        self.prompt, self.n_ctx, self.completion, self.hint = prompt, n_ctx, completion, hint
        total = prompt + completion
        if param == "prompt":  # OpenAI's completions say it so
            said = (
                f"This model's maximum context length is {n_ctx} tokens, however you requested"
                f" {total} tokens ({prompt} in your prompt; {completion} for the completion)."
                " Please reduce your prompt; or completion length."
            )
        else:
            said = (
                f"This model's maximum context length is {n_ctx} tokens. However, your messages"
                f" resulted in {total} tokens ({prompt} in the messages, {completion} for the"
                " completion). Please reduce the length of the messages or completion."
            )
        super().__init__(400, f"{said} {hint}".strip(), param=param, code="context_length_exceeded")

    def anthropic(self) -> str:
        """The message as Anthropic's Messages API says it."""
        said = f"prompt is too long: {self.prompt} tokens > {self.n_ctx} maximum"
        return f"{said}. {self.hint}" if self.hint else said


def refused(exc: ValidationError, where: str = "") -> ApiError:
    """The first problem of a request body (or of its part at `where`), as a 400 that names
    the field."""
    first = exc.errors()[0]
    where = ".".join([where, *(str(p) for p in first["loc"])] if where else map(str, first["loc"]))
    if first["type"] == "extra_forbidden":
        return ApiError(400, f"unknown field {where!r}", param=where, code="unknown_field")
    return ApiError(400, f"{where}: {first['msg']}", param=where or None, code="invalid_value")


def parse(model: type[Model], body: Any) -> Model:
    """`body` as `model`, or the 400 that says what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise refused(exc) from None


def validated(model: type[Model], value: Any, where: str) -> Model:
    """A part of a body (at `where`) as `model`, or the 400 naming the field inside it."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise refused(exc, where) from None


__all__ = ["ApiError", "ContextTooLong", "parse", "refused", "validated"]
