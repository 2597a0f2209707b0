"""The `harmony render` / `harmony parse` line contract, as pure functions.

Each input line gives exactly one output line; a bad line gives an error object for that
line and never stops the run. Output objects:
render → `{"tokens": [...], "text": "..."}`; parse → `{"messages": [...], "errors": [...],
"stop": "..."}`; either → `{"error": {"code": ..., "message": ...}}` for a line that could not
be handled.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from app.domain.messages import Conversation, Role
from app.errors import ErrorCode, HarmonyDeskError, InvalidInputError
from app.harmony import encoding as enc
from app.harmony.parser import parse_tokens
from app.harmony.renderer import RenderConfig, Renderer, RenderMode
from app.inputs import load_json


@dataclass(frozen=True)
class RenderDefaults:
    mode: RenderMode = RenderMode.COMPLETION
    next_role: Role = Role.ASSISTANT
    keep_analysis: bool = False


@dataclass(frozen=True)
class ParseDefaults:
    role: Role | None = Role.ASSISTANT
    strict: bool = False


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error": {"code": code.value, "message": message}}


def _choice(obj: Mapping[str, Any], key: str, default: Any, kind: Callable[[Any], Any]) -> Any:
    if key not in obj:
        return default
    try:
        return kind(obj[key])
    except ValueError as exc:
        raise InvalidInputError(f"{key!r} has an invalid value {obj[key]!r}") from exc


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(value)
    return value


def _optional_role(value: Any) -> Role | None:
    return None if value is None else Role(value)


def render_line(obj: Any, defaults: RenderDefaults, renderer: Renderer) -> dict[str, Any]:
    """Render one conversation object."""
    if not isinstance(obj, Mapping):
        raise InvalidInputError("each line must be a JSON object holding a conversation")
    mode = _choice(obj, "mode", defaults.mode, RenderMode)
    next_role = _choice(obj, "next_role", defaults.next_role, Role)
    keep = _choice(obj, "keep_analysis", defaults.keep_analysis, _flag)
    conversation = Conversation.from_dict(obj)
    tokens = renderer.render(
        conversation, mode, next_role=next_role, config=RenderConfig(auto_drop_analysis=not keep)
    )
    return {"tokens": tokens, "text": renderer.encoding.decode(tokens)}


def _tokens(obj: Mapping[str, Any]) -> list[int]:
    tokens = obj.get("tokens")
    if not isinstance(tokens, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**32 for t in tokens
    ):
        raise InvalidInputError(
            '"tokens" must be a list of token ids (whole numbers from 0; an id the vocabulary'
            f" does not have, {enc.N_VOCAB} and up, is read as U+FFFD)"
        )
    return tokens


def parse_line(obj: Any, defaults: ParseDefaults, encoding: enc.HarmonyEncoding) -> dict[str, Any]:
    """Parse one token list."""
    if not isinstance(obj, Mapping):
        raise InvalidInputError('each line must be a JSON object with a "tokens" list')
    role = _choice(obj, "role", defaults.role, _optional_role)
    strict = _choice(obj, "strict", defaults.strict, _flag)
    result = parse_tokens(_tokens(obj), role=role, strict=strict, encoding=encoding)
    return {
        "messages": [m.to_dict() for m in result.messages],
        "errors": [
            {"code": i.code.value, "message": i.message, "severity": i.severity.value}
            for i in result.issues
        ],
        "stop": result.stop.value,
    }


def run_lines(lines: Iterable[str], handle: Callable[[Any], dict[str, Any]], out: TextIO) -> int:
    """Apply `handle` to each non-blank JSON line; return how many lines gave errors."""
    failures = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            result = handle(load_json(line))
        except json.JSONDecodeError as exc:
            result = _error(ErrorCode.INPUT_JSON, f"the line is not valid JSON: {exc}")
        except HarmonyDeskError as exc:
            result = _error(exc.code, exc.message)
        failures += "error" in result
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
        out.flush()
    return failures
