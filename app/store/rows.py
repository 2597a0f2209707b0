"""Conversations as plain rows and back: what the store writes, computed without the database.

Guarantees: `structure_rows` and `reply_rows` only read the objects and return tuples of plain
values (so they can be taken on the GUI thread in a millisecond and written on another);
`build_doc` turns the rows read back into the same tree: every version (its images too), every
reply, the branches not shown (`following`), each reply's messages and debug record read when
first used; a reply saved while streaming comes back `incomplete` with an E-STREAM-TRUNCATED note.
"""

from __future__ import annotations

import functools
import json
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter

from app.domain.budget import Overflow
from app.domain.history import ChatDoc, DebugRecord, Reply, Segment, Turn, Version
from app.domain.messages import Author, Message, ReasoningEffort, Role, TextContent
from app.store.images import images_json, read_images

MESSAGES = TypeAdapter(list[Message])  # a reply's messages, written as one JSON array
TRUNCATED = (
    "E-STREAM-TRUNCATED: the app stopped while this answer streamed; it was saved up to then"
)


@dataclass
class Rows:
    """Rows to upsert, and the search text of what they hold."""

    conversation: tuple[Any, ...] | None = None
    turns: list[tuple[Any, ...]] = field(default_factory=list)
    versions: list[tuple[Any, ...]] = field(default_factory=list)
    replies: list[tuple[Any, ...]] = field(default_factory=list)
    messages: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)  # by reply id
    tool_calls: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    debug: dict[str, bytes | None] = field(default_factory=dict)  # by reply id; None: empty
    search: list[tuple[str, str, str, str]] = field(default_factory=list)  # text, conv, kind, ref


def conversation_row(doc: ChatDoc) -> tuple[Any, ...]:
    options = json.dumps(
        {
            "instructions": doc.instructions,
            "tools": list(doc.tools),
            "offline": doc.offline,
            "library": doc.library,
            "endpoint": doc.endpoint,
            "overflow": doc.overflow,
        }
    )
    return (doc.id, doc.title, int(doc.pinned), options, doc.created, time.time())


def structure_rows(doc: ChatDoc) -> Rows:
    """The conversation, its turns and versions (every branch), and their search text;
    replies only where they were never saved (`saved` is the set of reply ids already in)."""
    rows = Rows(conversation=conversation_row(doc))
    rows.search.append((doc.title, doc.id, "title", doc.id))

    def walk(turns: list[Turn], after: str | None) -> None:
        for position, turn in enumerate(turns):
            rows.turns.append((turn.id, doc.id, after, position, turn.chosen))
            for vpos, version in enumerate(turn.versions):
                schema = (
                    json.dumps(version.json_schema) if version.json_schema is not None else None
                )
                effort = version.effort.value if version.effort else None
                row = (version.id, turn.id, vpos, version.user_text, effort, schema, version.chosen)
                rows.versions.append((*row, images_json(version.images)))
                rows.search.append((version.user_text, doc.id, "user", version.id))
                if version.following:
                    walk(version.following, version.id)
            after = turn.version.id

    walk(doc.turns, None)
    return rows


def reply_rows(doc: ChatDoc, version: Version, reply: Reply, rows: Rows | None = None) -> Rows:
    """One reply (its messages, tool calls and search text) as rows."""
    rows = rows or Rows()
    d = reply.debug
    rows.debug[reply.id] = debug_blob(d)
    position = version.replies.index(reply) if reply in version.replies else 0
    bodies = MESSAGES.dump_json(list(reply.messages)).decode()
    rows.replies.append(
        (
            reply.id,
            version.id,
            position,
            reply.state,
            reply.error,
            reply.model,
            d.stop_reason,
            d.sampling,
            json.dumps(d.timings),
            json.dumps([asdict(s) for s in reply.segments], default=str),
            json.dumps({str(k): v for k, v in reply.open_segments.items()}),
            bodies,
            time.time(),
            doc.id,
        )
    )
    call_ids = [str(s.data.get("call_id", "")) or None for s in reply.segments if s.kind == "tool"]
    calls, results = iter(call_ids), iter(call_ids)  # the n-th call, its n-th result
    rows.messages[reply.id] = []
    for i, m in enumerate(reply.messages):
        intent = message_intent(m)
        call = next(calls if intent == "tool-call" else results, None) if "tool" in intent else None
        rows.messages[reply.id].append(
            (
                reply.id,
                i,
                m.author.role.value,
                m.author.name,
                m.channel,
                m.recipient,
                m.content_type,
                m.text,
                intent,
                call,
            )
        )
    rows.tool_calls[reply.id] = [
        (
            reply.id,
            str(s.data.get("call_id", "")),
            str(s.data.get("tool", "")),
            json.dumps(s.data, default=str),
        )
        for s in reply.segments
        if s.kind == "tool"
    ]
    rows.search.append((reply.visible_text(), doc.id, "reply", reply.id))
    return rows


def message_intent(m: Message) -> str:
    """What a model message is for: analysis, answer, preamble, tool-call, tool-result, or its
    role (user, system, developer)."""
    role = m.author.role
    if role is Role.TOOL:
        return "tool-result"
    if role is not Role.ASSISTANT:
        return role.value
    if m.recipient and m.recipient != "assistant":
        return "tool-call"
    return {"analysis": "analysis", "commentary": "preamble"}.get(m.channel or "", "answer")


def all_rows(doc: ChatDoc) -> Rows:
    """The whole conversation."""
    rows = structure_rows(doc)

    def replies(turns: list[Turn]) -> None:
        for turn in turns:
            for version in turn.versions:
                for reply in version.replies:
                    reply_rows(doc, version, reply, rows)
                replies(version.following)

    replies(doc.turns)
    return rows


def _messages(raw: list[dict[str, Any]]) -> tuple[Message, ...]:
    """A reply's messages as the store wrote them. Text-only messages (nearly all) are rebuilt
    without validating again (they were valid when written, and this keeps opening a long
    conversation fast); anything else goes through full validation."""
    out: list[Message] = []
    for m in raw:
        content = m.get("content", [])
        if _FAST_OK and all(c.get("type") == "text" for c in content) and set(m) <= _FAST_KEYS:
            author = m["author"]
            body = tuple(_built(TextContent, {"type": "text", "text": c["text"]}) for c in content)
            values = {
                "author": _author(author["role"], author.get("name")),
                "content": body,
                "channel": m.get("channel"),
                "recipient": m.get("recipient"),
                "content_type": m.get("content_type"),
            }
            out.append(_built(Message, values))
        else:
            out.append(Message.model_validate(m))
    return tuple(out)


M = TypeVar("M", bound=BaseModel)


def _built(cls: type[M], values: dict[str, Any]) -> M:
    """A model from values it was validated with when saved (every field given)."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


@functools.lru_cache(maxsize=256)
def _author(role: str, name: str | None) -> Author:
    """Authors are few and immutable: one object each."""
    return Author(role=Role(role), name=name)


_FAST_KEYS = frozenset({"author", "content", "channel", "recipient", "content_type"})
# the fast path gives every field; should the models gain one, it steps aside by itself
_FAST_OK = set(Message.model_fields) == _FAST_KEYS and set(TextContent.model_fields) == {
    "type",
    "text",
}


# two JSON columns come back as one array (one parse per reply); the messages stay text
REPLY_COLUMNS = (
    "id, version_id, state, error, model, '[' || segments || ',' || open_segments || ']', bodies"
)


class _Stored:
    """A loaded reply's messages (their JSON, decoded on first use) and its debug record (read
    from the store when the debug pane or a continuation asks)."""

    __slots__ = ("bodies", "read_debug", "reply_id")

    def __init__(self, bodies: str, reply_id: str, read_debug: Callable[[str], DebugRecord]):
        self.bodies, self.reply_id, self.read_debug = bodies, reply_id, read_debug

    def messages(self) -> tuple[Message, ...]:
        return _messages(json.loads(self.bodies))

    def debug(self) -> DebugRecord:
        return self.read_debug(self.reply_id)


def build_reply(row: tuple[Any, ...], read_debug: Callable[[str], DebugRecord]) -> Reply:
    """A reply from a row selected with `REPLY_COLUMNS`; `read_debug` reads a debug record."""
    rid, _vid, state, error, model, packed, bodies = row
    segments, open_segments = json.loads(packed)
    if state == "streaming":  # the app stopped while it streamed
        state, error = "incomplete", TRUNCATED
    return _made(
        Reply,
        {
            "segments": [_made(Segment, s) for s in segments],
            "state": state,
            "error": error,
            "model": model,
            "open_segments": {int(k): v for k, v in open_segments.items()} if open_segments else {},
            "id": rid,
            "stored": _Stored(bodies, rid, read_debug),
            "_messages": None,
            "_debug": None,
        },
    )


D = TypeVar("D")


def _made(cls: type[D], values: dict[str, Any]) -> D:
    """A dataclass instance from a value for every one of its fields, without `__init__` and
    its default factories: opening a long conversation builds tens of thousands of them."""
    obj = cls.__new__(cls)
    obj.__dict__.update(values)
    return obj


def debug_blob(d: DebugRecord) -> bytes | None:
    """The parts of a debug record not kept in the reply's columns, compressed (None when
    there is nothing: a reply that never reached the model)."""
    values = {
        "analysis": d.analysis,
        "prompt_ids": list(d.prompt_ids),
        "token_ids": d.token_ids,
        "events": d.events,
        "generation_start": d.generation_start,
        "generation_messages": d.generation_messages,
        "token_scores": d.token_scores,
        "spans": d.spans,
        "token_times": d.token_times,
        "text_scores": d.text_scores,
        "budget": d.budget,
    }
    if all(not v for v in values.values()):
        return None
    return zlib.compress(json.dumps(values, separators=(",", ":")).encode(), 1)


def debug_record(
    blob: bytes | str | None, sampling: str, stop_reason: str, timings: str
) -> DebugRecord:
    """A debug record from its stored parts (`blob` compressed, or JSON text as the first
    schema kept it)."""
    d = json.loads(zlib.decompress(blob) if isinstance(blob, bytes) else blob or "{}")
    return DebugRecord(
        analysis=d.get("analysis", ""),
        prompt_ids=tuple(d.get("prompt_ids", ())),
        token_ids=list(d.get("token_ids", ())),
        events=list(d.get("events", ())),
        sampling=sampling,
        stop_reason=stop_reason,
        timings=json.loads(timings),
        generation_start=d.get("generation_start", 0),
        generation_messages=d.get("generation_messages", 0),
        spans=[(str(k), float(a), float(b)) for k, a, b in d.get("spans", ())],
        token_times=[float(t) for t in d.get("token_times", ())],
        budget={str(k): int(v) for k, v in d.get("budget", {}).items()},
        text_scores=[
            (str(t), float(lp), tuple((str(a), float(b)) for a, b in top))
            for t, lp, top in d.get("text_scores", ())
        ],
        token_scores=[
            (int(t), float(lp), tuple((int(a), float(b)) for a, b in top))
            for t, lp, top in d.get("token_scores", ())
        ],
    )


def build_doc(
    conversation: tuple[Any, ...],
    turns: list[tuple[Any, ...]],
    versions: list[tuple[Any, ...]],
    replies: dict[str, list[Reply]],
) -> ChatDoc:
    """The tree from its rows (turns: id, after, position, chosen; versions: id, turn id,
    text, effort, schema, chosen, images — both in position order)."""
    cid, title, pinned, options, created, updated = conversation
    o = json.loads(options)
    doc = ChatDoc(
        title=title,
        id=cid,
        pinned=bool(pinned),
        instructions=o.get("instructions", ""),
        tools=tuple(o.get("tools", ())),
        offline=bool(o.get("offline", False)),
        library=bool(o.get("library", False)),
        endpoint=o.get("endpoint") if isinstance(o.get("endpoint"), str) else None,
        overflow=Overflow(o["overflow"]) if o.get("overflow") in set(Overflow) else None,
        created=created,
        updated=updated,
    )
    by_turn: dict[str, list[Version]] = {}
    for vid, turn_id, text, effort, schema, chosen, images in versions:
        version = {
            "user_text": text,
            "effort": ReasoningEffort(effort) if effort else None,
            "json_schema": json.loads(schema) if schema else None,
            "replies": replies.get(vid, []),
            "chosen": chosen,
            "following": [],
            "id": vid,
            "images": read_images(images, vid),
        }
        by_turn.setdefault(turn_id, []).append(_made(Version, version))
    after: dict[str | None, list[Turn]] = {}
    for tid, after_version, _position, chosen in turns:
        turn = {"versions": by_turn.get(tid, []), "chosen": chosen, "id": tid}
        after.setdefault(after_version, []).append(_made(Turn, turn))
    doc.turns = _chain(after, None)
    return doc


def _chain(after: dict[str | None, list[Turn]], start: str | None) -> list[Turn]:
    """The turns that follow version `start` (None: the first turn), each version's own branch
    in `following`. (A module function, not a closure: a recursive closure is a reference cycle
    that would keep the whole tree alive until the cyclic collector runs.)"""
    out: list[Turn] = []
    nexts = after.get(start, [])
    while nexts and nexts[0].versions:
        turn = nexts[0]
        out.append(turn)
        for i, v in enumerate(turn.versions):
            if i != turn.chosen:
                v.following = _chain(after, v.id)
        nexts = after.get(turn.version.id, [])
    return out


__all__ = [
    "TRUNCATED",
    "Rows",
    "all_rows",
    "build_doc",
    "build_reply",
    "debug_blob",
    "debug_record",
    "message_intent",
    "reply_rows",
    "structure_rows",
]
