"""The server's error, as every API answers it, and a request body read into its wire model.

Guarantees: an `ApiError` carries its HTTP status, type, the field at fault (`param`, spelled
as the client's own API spells it) and its code; its default body is OpenAI's
`{"error": {"message", "type", "param", "code"}}` (an API with a shape of its own writes it from
the same error: `app/server/routing.py`). A body is validated before anything runs — a field
its API does not have is a 400 naming it (`code: "unknown_field"`), a value out of range or of
the wrong type a 400 naming the field (`code: "invalid_value"`), a body that is no JSON object
a 400 that says so.
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


__all__ = ["ApiError", "parse", "refused", "validated"]
