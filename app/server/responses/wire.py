"""The Responses API request as the server accepts it, and the function tools it declares.

Guarantees: validated before anything runs (`errors.parse`): a field this server does not take
(`previous_response_id`, `include`, ...) is a 400 naming it, as is a value of a wrong type or
out of range (`temperature` 0 to 2, `top_p` above 0 to 1, `max_output_tokens` at least 1);
input items are read leniently here and checked one by one where they are converted
(`convert`), each error naming the item (`input.I...`); a function tool is checked where it is
converted (`FunctionTool`: its name letters, digits, `_` and `-`, 1 to 64), so another type of
tool is refused by its type, not by its fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.server.asked import TOOL_NAME

NOT_TEXT = ("input_image", "input_file", "input_audio")  # content parts that are no text


class ResponsesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = ""
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stream: bool = False
    store: bool | None = None
    metadata: dict[str, Any] | None = None
    user: str | None = None
    truncation: Literal["auto", "disabled"] | None = None  # auto: drop from the middle

    @property
    def items(self) -> list[dict[str, Any]]:
        """The input as items (a string is one user message)."""
        if isinstance(self.input, str):
            return [{"role": "user", "content": self.input}]
        return self.input

    @property
    def has_images(self) -> bool:
        """Whether a message's content has an image part (decoded as it is converted)."""
        return any(
            isinstance(p, dict) and p.get("type") == "input_image"
            for item in self.items
            if isinstance(item.get("content"), list)
            for p in item["content"]
        )


class FunctionTool(BaseModel):
    """A function tool the request declares."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionCallItem(BaseModel):
    """A call the model made, sent back as input."""

    model_config = ConfigDict(extra="ignore")

    call_id: str = ""
    name: str = ""
    arguments: str = "{}"


class FunctionOutputItem(BaseModel):
    """A call's result (`output` is read apart: a string or text parts)."""

    model_config = ConfigDict(extra="ignore")

    call_id: str | None = ""


__all__ = [
    "NOT_TEXT",
    "FunctionCallItem",
    "FunctionOutputItem",
    "FunctionTool",
    "ResponsesRequest",
]
