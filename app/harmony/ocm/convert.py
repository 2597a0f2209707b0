"""Conversions between the transcript formats the command line reads and writes.

Formats: `ocm` (OpenChatML 2.2 text), `json` (its JSON projection), `harmony-json`
(openai-harmony's conversation JSON) and `harmony-tokens` (`{"tokens": [...]}`: the whole
history rendered, analysis included, or parsed back out). Every failure is a
`TranscriptError` with a code.
"""

from __future__ import annotations

import json
from typing import Any, Final

from app.domain.messages import Conversation
from app.errors import ErrorCode, InvalidInputError, TranscriptError
from app.harmony import encoding as enc
from app.harmony.ocm.interop import conversation_from_dict, from_conversation, to_conversation
from app.harmony.ocm.model import Problem, Transcript
from app.harmony.ocm.projection import from_json, to_json
from app.harmony.ocm.reader import check_transcript, read_transcript
from app.harmony.ocm.writer import write_transcript
from app.inputs import load_json

FORMATS: Final = ("ocm", "json", "harmony-json", "harmony-tokens")


def _json(text: str) -> Any:
    try:
        return load_json(text)
    except InvalidInputError as exc:
        raise TranscriptError(ErrorCode.INPUT_INVALID, exc.message) from exc
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            ErrorCode.INPUT_JSON, f"not valid JSON: {exc.msg}", exc.lineno, exc.colno, exc.pos
        ) from exc


def detect(text: str) -> str:
    """The format of `text`, from its first characters and keys."""
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith(("---", "<|start|>")):
        return "ocm"
    data = _json(text)
    if isinstance(data, list) or (isinstance(data, dict) and "tokens" in data):
        return "harmony-tokens"
    if isinstance(data, dict) and "header" in data:
        return "json"
    return "harmony-json"


def _tokens(data: Any) -> list[int]:
    tokens = data.get("tokens") if isinstance(data, dict) else data
    if not isinstance(tokens, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and 0 <= t < enc.N_VOCAB for t in tokens
    ):
        raise TranscriptError(ErrorCode.INPUT_INVALID, '"tokens" must be a list of token ids')
    return tokens


def load(text: str, fmt: str | None = None) -> Transcript:
    """A transcript from `text` in `fmt` (detected when None)."""
    fmt = fmt or detect(text)
    if fmt == "ocm":
        return read_transcript(text)
    data = _json(text)
    if fmt == "json":
        return from_json(data)
    if fmt == "harmony-json":
        return from_conversation(conversation_from_dict(data))
    if fmt == "harmony-tokens":
        from app.harmony.parser import parse_tokens

        result = parse_tokens(_tokens(data), role=None)
        return from_conversation(Conversation(messages=tuple(result.messages)))
    raise TranscriptError(ErrorCode.INPUT_INVALID, f"unknown format {fmt!r}")


def dump(transcript: Transcript, fmt: str) -> str:
    """`transcript` written in `fmt`."""
    if fmt == "ocm":
        return write_transcript(transcript)
    if fmt == "json":
        return json.dumps(to_json(transcript), indent=2, ensure_ascii=False) + "\n"
    conversation = to_conversation(transcript)
    if fmt == "harmony-json":
        return json.dumps(conversation.to_dict(), ensure_ascii=False) + "\n"
    if fmt == "harmony-tokens":
        from app.harmony.renderer import RenderConfig, Renderer, RenderMode

        renderer = Renderer()  # every message, analysis included: a conversion loses nothing
        keep = RenderConfig(auto_drop_analysis=False)
        tokens = renderer.render(conversation, RenderMode.PLAIN, config=keep)
        return json.dumps({"tokens": tokens, "text": renderer.encoding.decode(tokens)}) + "\n"
    raise TranscriptError(ErrorCode.INPUT_INVALID, f"unknown format {fmt!r}")


def problems(text: str) -> list[Problem]:
    """Every problem in a transcript given as OpenChatML text or its JSON projection."""
    fmt = detect(text)
    if fmt == "ocm":
        return check_transcript(text)
    try:
        transcript = load(text, fmt)
    except TranscriptError as exc:
        return [Problem(exc.code, exc.detail, exc.line, exc.column, exc.offset)]
    return list(transcript.problems)
