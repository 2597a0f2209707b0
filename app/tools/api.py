"""The only module a tool plugin imports: the `tool` decorator, the context, results and errors.

A typed Python function with a docstring becomes a tool: its parameters become a pydantic
model, whose JSON schema is what the model sees (the Harmony `functions` namespace) and what
JSON mode constrains the arguments to. Built-in tools are written against this module too.
"""

from __future__ import annotations

import copy
import inspect
import threading
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import pluggy
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from app.domain.events import ToolProgress
from app.domain.messages import ToolDescription
from app.errors import ErrorCode, HarmonyDeskError


class Risk(StrEnum):
    """What running a tool may do; shown when the user is asked to approve a call."""

    READ_ONLY = "read-only"
    NETWORK = "network"
    RUNS_CODE = "runs code"
    WRITES_FILES = "writes files"


class ToolError(HarmonyDeskError):
    """Raise it from a tool for an expected failure: the model reads `message`, the chat goes on.
    `code` is one of the app's error codes (`E-TOOL-ERROR` unless the tool names another)."""

    code = ErrorCode.TOOL_ERROR

    def __init__(self, message: str, code: str = "E-TOOL-ERROR") -> None:
        super().__init__(message)
        known = {c.value for c in ErrorCode}
        self.code = ErrorCode(code) if code in known else ErrorCode.TOOL_ERROR


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about its call."""

    call_id: str
    conversation_id: str = ""
    offline: bool = False
    cancel: threading.Event | None = field(default=None, compare=False, repr=False)
    progress: Callable[[ToolProgress], None] | None = field(default=None, compare=False, repr=False)

    def report(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Say how far the call has got (shown on its tool card while it runs); a no-op where
        nothing listens."""
        if self.progress is not None:
            self.progress(ToolProgress(self.call_id, done, total, message or ""))

    def plain(self) -> dict[str, Any]:
        """The context as plain values (for a tool in another process; no cancel event)."""
        return {
            "call_id": self.call_id,
            "conversation_id": self.conversation_id,
            "offline": self.offline,
        }


Body = Literal["json", "code"]
"""How the model writes a call: JSON arguments, or raw text (Harmony's `python` gets code)."""


@dataclass(frozen=True)
class Tool:
    """A registered tool: its function, argument model, namespace, risk and deadline."""

    name: str
    namespace: str
    description: str
    arguments: type[BaseModel]
    function: Callable[..., Any]
    risk: Risk = Risk.READ_ONLY
    deadline_ms: int = 30_000
    plugin: str = "built-in"
    wants_context: bool = field(default=False, compare=False)
    body: Body = "json"  # "code": the call's whole body is the one string parameter `code`
    text_reply: bool = False  # a successful string result goes to the model as it is

    @property
    def qualified_name(self) -> str:
        """`namespace.name`; a namespace's one tool named like it is the namespace (`python`)."""
        return self.namespace if self.name == self.namespace else f"{self.namespace}.{self.name}"

    @property
    def channel(self) -> str:
        """The channel the model calls it on: built-ins on `analysis`, functions on `commentary`."""
        return "commentary" if self.namespace == "functions" else "analysis"

    @property
    def parameters(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return schema

    def description_for_model(self) -> ToolDescription:
        return ToolDescription(
            name=self.name, description=self.description, parameters=self.parameters
        )

    def parse_arguments(self, raw: dict[str, Any]) -> BaseModel:
        """The validated arguments; pydantic's `ValidationError` when they do not match."""
        return self.arguments.model_validate(raw)


def _is_context(annotation: Any) -> bool:
    """True for `ToolContext` and `ToolContext | None`: filled in by the host, not the model."""
    if annotation is ToolContext:
        return True
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return union and ToolContext in typing.get_args(annotation)


@typing.overload
def tool(function: Callable[..., Any]) -> Tool: ...


@typing.overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    namespace: str = "functions",
    risk: Risk = Risk.READ_ONLY,
    deadline_ms: int = 30_000,
    body: Body = "json",
    text_reply: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    namespace: str = "functions",
    risk: Risk = Risk.READ_ONLY,
    deadline_ms: int = 30_000,
    body: Body = "json",
    text_reply: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: turn a typed function with a docstring into a `Tool`."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        doc = inspect.getdoc(fn)
        if not doc:
            raise TypeError(
                f"tool {fn.__name__!r} needs a docstring: it is the model's description of it"
            )
        fields: dict[str, Any] = {}
        wants_context = False
        hints = typing.get_type_hints(fn, include_extras=True)
        for pname, param in inspect.signature(fn).parameters.items():
            annotation = hints.get(pname, inspect.Parameter.empty)
            if _is_context(annotation):
                wants_context = True
                continue
            if annotation is inspect.Parameter.empty:
                raise TypeError(
                    f"tool {fn.__name__!r}: parameter {pname!r} needs a type annotation"
                )
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        if body == "code" and list(fields) != ["code"]:
            raise TypeError(f"tool {fn.__name__!r}: a code-bodied tool takes one parameter, `code`")
        model = create_model(
            f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        return Tool(
            name=name or fn.__name__,
            namespace=namespace,
            description=doc,
            arguments=model,
            function=fn,
            risk=risk,
            deadline_ms=deadline_ms,
            wants_context=wants_context,
            body=body,
            text_reply=text_reply,
        )

    return wrap(function) if function is not None else wrap


def schema_arguments(schema: dict[str, Any]) -> type[BaseModel]:
    """An argument model that reports `schema` as it is and keeps every argument: for tools
    whose schema comes from elsewhere (a plugin host, an MCP server), which validate the call
    themselves."""

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    return Arguments


hookimpl = pluggy.HookimplMarker("harmony_desk")
"""Marks a plugin's hook implementations: `@hookimpl def harmony_desk_tools(): return [my_tool]`."""

__all__ = [
    "Risk",
    "Tool",
    "ToolContext",
    "ToolError",
    "ValidationError",
    "hookimpl",
    "schema_arguments",
    "tool",
]
