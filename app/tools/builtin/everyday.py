"""Two everyday function tools: the current date and time, and a safe calculator.

The calculator evaluates arithmetic only (numbers, + - * / // % **, parentheses, unary signs)
by walking Python's syntax tree: no names, calls or attributes, and bounded exponents, so a
request can neither run code nor exhaust memory.
"""

from __future__ import annotations

import ast
import datetime as dt
import operator
from collections.abc import Callable
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

from app.tools.api import ToolError, tool

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_MAX_EXPONENT = 1000
_MAX_LENGTH = 500


Zone = Annotated[str, Field(max_length=40, pattern=r"^[A-Za-z_]+(/[A-Za-z0-9_+-]+){0,2}$")]
Expression = Annotated[str, Field(max_length=_MAX_LENGTH)]


@tool
def current_time(timezone: Zone = "UTC") -> dict[str, str]:
    """The current date and time in an IANA time zone (for example Europe/Oslo)."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ToolError(f"unknown time zone {timezone!r}") from exc
    now = dt.datetime.now(zone)
    return {
        "timezone": timezone,
        "iso": now.isoformat(timespec="seconds"),
        "weekday": now.strftime("%A"),
    }


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ToolError(f"exponent {right} is too large (at most {_MAX_EXPONENT})")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise ToolError("division by zero") from exc
        except OverflowError as exc:
            raise ToolError("the result is too large") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    raise ToolError(f"only arithmetic is allowed, not {type(node).__name__}")


@tool
def calculate(expression: Expression) -> dict[str, float | str]:
    """Evaluate an arithmetic expression (numbers, + - * / // % ** and parentheses)."""
    if len(expression) > _MAX_LENGTH:
        raise ToolError(f"the expression is longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression: {exc.msg}") from exc
    return {"expression": expression, "result": _eval(tree)}
