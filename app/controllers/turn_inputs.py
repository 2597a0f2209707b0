"""What a window turn is made from: the conversation's header, the JSON mode its message was
sent with, and the reply it writes into (with its builder, while it runs: `TurnState`).

Guarantees: a message keeps the JSON mode it was sent with (Continue and Regenerate use the
version's schema, not what the composer holds now); a new reply becomes the version's chosen
alternative, the others kept; a continued reply gives back the ids of its last generation (to
follow the prompt) and the messages before it, and forgets those ids from its debug record,
which the continuation writes again.
"""

from __future__ import annotations

from app.constrain.constraint import JsonSchemaFormat, ResponseFormat
from app.domain.history import ChatDoc, Reply, Version
from app.domain.messages import DeveloperContent, Message, Role
from app.domain.reply import ReplyBuilder


class TurnState:
    """One running turn: the conversation its reply is written to, and its reply builder."""

    def __init__(self, doc: ChatDoc, reply: Reply) -> None:
        self.doc = doc  # the conversation the reply is written to (shown or not)
        self.builder = ReplyBuilder(reply)  # what the reply shows, from the turn's events
        self.resume: dict[int, int] | None = None  # the mapping a continued reply starts from


def header(instructions: str) -> list[Message]:
    """The messages before the history: the conversation's instructions, if any."""
    if not instructions.strip():
        return []
    return [Message.of(Role.DEVELOPER, DeveloperContent(instructions=instructions))]


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


__all__ = ["TurnState", "header", "json_mode", "read_stored", "reply_for"]
