"""What `harmony-desk replay` replays and what it reports, shared by every frontend.

A line of input describes one generation (`source_of`); `session_for` gives a session whose
one generation is that source, by token ids (a scripted local worker) or as text from a
scripted OpenAI-compatible server (`endpoint_of`); `result_of` turns a folded reply into the
replay line (`shown`, `hidden`, `errors`, `stop`).

Guarantees: no frontend is imported here (no Qt, no terminal printer), so the terminal and
the window paths (`app/cli/replay.py`, `app/cli/replay_window.py`) build the same sessions
and report in the same shape; a line that describes no generation is an `InvalidInputError`
that says what a line must hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain.endpoint import Endpoint
from app.domain.reply import ReplyBuilder
from app.engine.local.scripted import ScriptedClient, ScriptedServer
from app.engine.local.session import ChatSession
from app.engine.remote.session import RemoteSession
from app.errors import InvalidInputError
from app.harmony import encoding as enc
from app.templates.registry import get_template

USER_TEXT = "Replay."
_LANES = {"answer": "answer", "preamble": "preamble", "json": "answer", "tool": "tool_call"}


@dataclass(frozen=True)
class Source:
    """One generation to replay, in both shapes."""

    tokens: list[int]
    chunks: list[str]


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


def endpoint_of() -> Endpoint:
    """The endpoint the scripted server of a `remote-text` replay stands for: a raw server
    that passes the model's output through as text, so its calls are read from the text
    (`text_calls`, as a user who replays raw output through it asks)."""
    return Endpoint(
        name="replay",
        base_url="http://replay.invalid/v1",
        model="gpt-oss-replay",
        text_calls=True,
    )


def session_for(source: Source, via: str) -> ChatSession | RemoteSession:
    """A session whose one generation is `source`, by the path `via` names."""
    if via == "tokens":
        return ChatSession(ScriptedClient([source.tokens]), get_template("harmony"))
    ended = any(
        t in (enc.RETURN, enc.CALL) for t in source.tokens
    )  # else cut, as by a length limit
    server = ScriptedServer([source.chunks], finish="stop" if ended else "length")
    return RemoteSession(endpoint_of(), None, client=server)


def result_of(builder: ReplyBuilder, texts: list[str] | None = None) -> dict[str, Any]:
    """The replay line for a folded reply; `texts`, where given, are the shown texts as
    painted."""
    reply = builder.reply
    shown: list[dict[str, Any]] = []
    for i, segment in enumerate(reply.segments):
        lane = _LANES.get(segment.kind, "notice")
        if lane == "tool_call":
            item = {
                "lane": lane,
                "text": segment.data.get("arguments", ""),
                "recipient": segment.data.get("tool"),
            }
        else:
            text = texts[i] if texts is not None else segment.text
            item = {"lane": lane, "text": text, "recipient": None}
        if item["text"] or lane not in ("answer", "preamble"):  # an empty block shows nothing
            shown.append(item)
    errors = [{"code": i.code.value, "severity": i.severity.value} for i in builder.issues]
    stop = builder.stop.value if builder.stop is not None else None
    return {
        "shown": shown,
        "hidden": {"analysis": reply.debug.analysis},
        "errors": errors,
        "stop": stop,
    }


__all__ = ["USER_TEXT", "Source", "endpoint_of", "result_of", "session_for", "source_of"]
