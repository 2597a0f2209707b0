"""What a window turn is made from: the conversation's header, the JSON mode and images its
message was sent with, and the reply it writes into (with its builder, while it runs:
`TurnState`); `turn_spec` gathers them for the engine thread.

Guarantees: a message keeps the JSON mode it was sent with (Continue and Regenerate use the
version's schema, not what the composer holds now), and its images (the version's, shown to
the model before its text); a new reply becomes the version's chosen alternative, the others
kept; a continued reply gives back the ids of its last generation (to follow the prompt) and
the messages before it, and forgets those ids from its debug record, which the continuation
writes again. `sees_images`: a remote endpoint is let decide (its server refuses what it
cannot read); the model here sees images when it was loaded with its projector; None while no
model is loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import partial
from typing import Protocol

from app.constrain.constraint import JsonSchemaFormat, ResponseFormat, ToolChoice
from app.controllers.model_host import ModelHost
from app.controllers.remote_host import RemoteHost
from app.controllers.tool_host import WindowTools
from app.controllers.turn_source import TurnSpec
from app.domain.budget import Overflow
from app.domain.history import ChatDoc, Reply, Version
from app.domain.messages import Message, user_message
from app.domain.reply import ReplyBuilder
from app.engine.request import GenerationRequest
from app.engine.turn.run import TurnRequest
from app.tools.api import ToolContext
from app.tools.approval import ApprovalPolicy
from app.tools.calls import allow_all

TOP_ALTERNATIVES = 5  # per token, for the debug pane's token strip


class TurnState:
    """One running turn: the conversation its reply is written to, and its reply builder."""

    def __init__(self, doc: ChatDoc, reply: Reply) -> None:
        self.doc = doc  # the conversation the reply is written to (shown or not)
        self.builder = ReplyBuilder(reply)  # what the reply shows, from the turn's events
        self.resume: dict[int, int] | None = None  # the mapping a continued reply starts from


def json_mode(version: Version) -> ResponseFormat | None:
    """The JSON mode a version's message was sent with, if any."""
    if version.json_schema is None:
        return None
    return ResponseFormat(
        type="json_schema", json_schema=JsonSchemaFormat(schema=version.json_schema)
    )


def reply_for(
    version: Version, resume: Reply | None, model: str
) -> tuple[Reply, tuple[int, ...], tuple[Message, ...]]:
    """A new reply, or the cut one to continue: its ids so far and its earlier messages."""
    if resume is None:
        reply = Reply(model=model)
        version.replies.append(reply)
        version.chosen = len(version.replies) - 1
        return reply, (), ()
    debug = resume.debug
    prefix = tuple(debug.token_ids[debug.generation_start :])
    kept = resume.messages[: len(resume.messages) - debug.generation_messages]
    del debug.token_ids[debug.generation_start :]
    return resume, prefix, kept


def read_stored(doc: ChatDoc, upto: int, resume: Reply | None) -> None:
    """Read the messages of the replies before turn `upto` and the debug record of `resume`
    (a loaded conversation reads them lazily: call this off the GUI thread)."""
    for turn in doc.turns[:upto]:
        if turn.version.reply is not None:
            _ = turn.version.reply.messages
    if resume is not None:
        _ = resume.debug, resume.messages


def sees_images(host: ModelHost, remote: bool) -> bool | None:
    """Whether the conversation's model sees images (see the module guarantees); `remote`:
    it talks to a remote endpoint."""
    if remote:
        return True
    if not host.ready:
        return None
    return host.capabilities.images if host.capabilities is not None else False


class TurnOwner(Protocol):
    """What a window turn is gathered from: the chat controller's turn settings and the
    hosts it runs on (passed in, so that this module never imports the controller)."""

    host: ModelHost
    remote: RemoteHost | None
    tools: WindowTools
    tool_choice: ToolChoice
    max_tokens: int
    overflow: Overflow  # the settings' default policy
    compact_at: float  # summarise: the share of the context whose passing compacts
    keep_recent: float  # summarise: the share of the room kept verbatim
    score_tokens: bool
    vocab_of: object


def generation_of(
    chat: TurnOwner,
    doc: ChatDoc,
    index: int,
    prefix: Sequence[int],
    tools: bool,
) -> GenerationRequest:
    """The knobs of a window turn, built once: the version's JSON mode and effort, the chat's
    tool choice (with tools) and answer budget, the conversation's overflow policy (else the
    settings' default, which the chat keeps: nothing is read from disk on the GUI thread), its
    KV snapshots kept under its id, scored tokens for the debug pane; under summarise, the
    latest compaction of the turns before it and the settings' threshold and share kept, and
    the compaction the next turn would need made after the answer (a person reads it)."""
    version = doc.turns[index].version
    return GenerationRequest(
        max_tokens=chat.max_tokens,
        tool_choice=chat.tool_choice if tools else "auto",
        response_format=json_mode(version),
        effort=version.effort,
        overflow=doc.overflow or chat.overflow,
        compaction=doc.compaction(upto=index),
        compact_at=chat.compact_at,
        keep_recent=chat.keep_recent,
        compact_ahead=True,
        keep=doc.id,
        top_logprobs=TOP_ALTERNATIVES if chat.score_tokens else 0,
        prefix=tuple(prefix),
        reserved=True,  # the window's turn: never queued behind the server's clients
    )


def turn_spec(
    chat: TurnOwner,
    doc: ChatDoc,
    turn_index: int,
    resumed: tuple[Sequence[int] | None, Sequence[Message]],
    policy: ApprovalPolicy | None,
    cancel: threading.Event,
) -> TurnSpec:
    """Turn `turn_index` of `doc` for the engine thread; `resumed`: a continued reply's ids
    (None: a fresh reply) and earlier messages; `policy`: the conversation's tool approvals
    (None: it has no tools)."""
    version = doc.turns[turn_index].version
    prefix, kept = resumed
    request = TurnRequest(
        generation_of(chat, doc, turn_index, prefix or (), policy is not None),
        message=user_message(version.user_text, version.images),
        approve=policy if policy is not None else allow_all,
        context=ToolContext(call_id="", conversation_id=doc.id, offline=doc.offline),
    )
    tools = partial(lambda d: chat.tools.of(d).registry, doc) if policy is not None else None
    return TurnSpec(
        host=chat.host,
        remote=chat.remote,
        endpoint=doc.endpoint,
        offline=doc.offline,
        history=doc.prompt_messages(upto=turn_index),
        request=request,
        kept=kept,
        continued=prefix is not None,
        tools=tools,
        need_vocab=chat.vocab_of is not chat.host.backend,
        cancel=cancel,
    )


def compaction_spec(chat: TurnOwner, doc: ChatDoc, cancel: threading.Event) -> TurnSpec:
    """All of `doc` (its chosen branch) to compact at once, for the engine thread
    (`turn_source.compaction_events`): forced whatever its size, carrying its latest compaction
    forward, with a turn's answer reserve and the settings' share kept verbatim; there is no
    message, so its latest exchange is the one kept whatever the share."""
    generation = GenerationRequest(
        max_tokens=chat.max_tokens,
        overflow=Overflow.SUMMARISE,
        compaction=doc.compaction(),
        compact_at=chat.compact_at,
        keep_recent=chat.keep_recent,
        compact_now=True,
        keep=doc.id,
        reserved=True,
    )
    return TurnSpec(
        host=chat.host,
        remote=chat.remote,
        endpoint=doc.endpoint,
        offline=doc.offline,
        history=doc.prompt_messages(),
        request=TurnRequest(generation),
        kept=(),
        continued=False,
        tools=None,
        need_vocab=False,
        cancel=cancel,
    )


__all__ = [
    "TOP_ALTERNATIVES",
    "TurnOwner",
    "TurnState",
    "compaction_spec",
    "generation_of",
    "json_mode",
    "read_stored",
    "reply_for",
    "sees_images",
    "turn_spec",
]
