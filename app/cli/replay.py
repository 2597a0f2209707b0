"""`harmony-desk replay`: model output replayed through the real turn path of a frontend.

Each input line (JSON) is one generation: `{"tokens": [...]}` (ids, as a local model gives
them), or `{"text": "..."}` / `{"chunks": ["...", ...]}` (Harmony markup as a server streams
it). `--via tokens` feeds ids to a local session (a scripted worker), `--via remote-text` streams
the text from a scripted OpenAI-compatible server to a remote session; `--frontend terminal`
runs the terminal chat's path, `--frontend window` the window's (a real `ChatController` and
`MainWindow`, offscreen). One JSON line comes out per input line:

    {"shown": [{"lane": "answer|preamble|tool_call|notice", "text": "...", "recipient": ...}],
     "hidden": {"analysis": "..."}, "errors": [{"code": ..., "severity": ...}], "stop": ...}

Guarantee: `shown` is what that frontend showed — for the window, read back from the painted
transcript — so the same output must give the same `shown` on every frontend and both paths.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from dataclasses import dataclass
from typing import Any

from app.domain.endpoint import Endpoint
from app.domain.history import Reply
from app.domain.reply_builder import ReplyBuilder
from app.engine.chat import ChatSession
from app.engine.remote import RemoteSession
from app.engine.scripted import ScriptedClient, ScriptedServer
from app.engine.turn import TurnRequest, run_turn
from app.errors import InvalidInputError
from app.harmony import encoding as enc
from app.harmony.jsonl import run_lines
from app.templates.registry import get_template

USER_TEXT = "Replay."
_LANES = {"answer": "answer", "preamble": "preamble", "json": "answer", "tool": "tool_call"}


@dataclass(frozen=True)
class Source:
    """One generation to replay, in both shapes."""

    tokens: list[int]
    chunks: list[str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frontend", choices=["window", "terminal"], default="terminal")
    parser.add_argument("--via", choices=["tokens", "remote-text"], default="tokens")
    parser.add_argument("--role", choices=["assistant"], default="assistant")


def source_of(obj: Any, encoding: enc.HarmonyEncoding) -> Source:
    """The generation a line describes (a clear error for a line that describes none)."""
    if not isinstance(obj, dict):
        raise InvalidInputError('each line is an object with "tokens", "text" or "chunks"')
    if isinstance(obj.get("tokens"), list):
        ids = obj["tokens"]
        if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
            raise InvalidInputError('"tokens" must be a list of token ids')
        text = encoding.decode(ids)
        return Source(list(ids), [text[i : i + 16] for i in range(0, len(text), 16)])
    chunks = obj.get("chunks") if "chunks" in obj else [obj.get("text")]
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise InvalidInputError('"text" must be a string, "chunks" a list of strings')
    return Source(encoding.encode_with_specials("".join(chunks)), list(chunks))


def _endpoint() -> Endpoint:
    return Endpoint(name="replay", base_url="http://replay.invalid/v1", model="gpt-oss-replay")


def session_for(source: Source, via: str) -> ChatSession | RemoteSession:
    """A session whose one generation is `source`, by the path `via` names."""
    if via == "tokens":
        return ChatSession(ScriptedClient([source.tokens]), get_template("harmony"))
    ended = any(
        t in (enc.RETURN, enc.CALL) for t in source.tokens
    )  # else cut, as by a length limit
    server = ScriptedServer([source.chunks], finish="stop" if ended else "length")
    return RemoteSession(_endpoint(), None, client=server)


def result_of(builder: ReplyBuilder, texts: list[str] | None = None) -> dict[str, Any]:
    """The replay line for a folded reply; `texts`, where given, are the shown texts as
    painted."""
    reply = builder.reply
    shown: list[dict[str, Any]] = []
    for i, segment in enumerate(reply.segments):
        lane = _LANES.get(segment.kind, "notice")
        if lane == "tool_call":
            item = {"lane": lane, "text": segment.data.get("arguments", ""),
                    "recipient": segment.data.get("tool")}  # fmt: skip
        else:
            text = texts[i] if texts is not None else segment.text
            item = {"lane": lane, "text": text, "recipient": None}
        if item["text"] or lane not in ("answer", "preamble"):  # an empty block shows nothing
            shown.append(item)
    errors = [{"code": i.code.value, "severity": i.severity.value} for i in builder.issues]
    stop = builder.stop.value if builder.stop is not None else None
    return {"shown": shown, "hidden": {"analysis": reply.debug.analysis}, "errors": errors,
            "stop": stop}  # fmt: skip


def replay_terminal(source: Source, via: str) -> dict[str, Any]:
    """Through the terminal chat's path: its printer and its reply builder."""
    from app.cli.terminal_reply import TerminalReply

    printer = TerminalReply(False, io.StringIO(), io.StringIO())
    builder = printer.begin(Reply())
    for event in run_turn(session_for(source, via), TurnRequest(USER_TEXT)):
        printer(event)
    result = result_of(builder)
    result["stdout"] = printer.out.getvalue()  # type: ignore[attr-defined]
    return result


def replay_window(source: Source, via: str) -> dict[str, Any]:
    """Through the window: a real controller and main window, offscreen, painted."""
    from app.cli.replay_window import run_in_window

    return run_in_window(source, via)


def run(args: argparse.Namespace) -> int:
    encoding = enc.load_encoding()
    if args.frontend == "window":
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    frontend = replay_window if args.frontend == "window" else replay_terminal

    def handle(obj: Any) -> dict[str, Any]:
        return frontend(source_of(obj, encoding), args.via)

    run_lines(sys.stdin, handle, sys.stdout)
    return 0


__all__ = ["Source", "add_arguments", "replay_terminal", "replay_window", "result_of", "run"]
