"""Regenerate, Edit and Continue that wait their turn in the send queue, and how they run.

While another chat's answer streams, a turn's Regenerate, Edit (its new text) or Continue is
queued like a message (`send_queue.py`) and runs later in its chat, shown or not. This module
holds what such an action is and runs one on the conversation it was asked in.

Guarantees: an action names its turn by the turn's id (never by its position, which later
turns or an edit can change) and finds it again in the conversation as it is when the action
runs; `run` answers True (started), False (cannot start now: the window is busy or no model
answers; it waits again) or None (it no longer applies: its turn is gone, or the answer to
continue is no longer the last one or can no longer go on), never acting on another turn than
the one it was asked on; each kind is said in words a row can show (`described`).
"""

from __future__ import annotations

from typing import Literal, Protocol

from app.domain import attachments
from app.domain.history import ChatDoc

Kind = Literal["message", "regenerate", "edit", "continue"]
Action = Literal["regenerate", "edit", "continue"]
ACTIONS: tuple[Action, ...] = ("regenerate", "edit", "continue")


class ActingChat(Protocol):
    """What running an action needs of the chat controller (passed in: never imported)."""

    def regenerate(self, turn_index: int | None = None, doc: ChatDoc | None = None) -> bool: ...
    def edit(self, turn_index: int, text: str, doc: ChatDoc | None = None) -> bool: ...
    def continue_reply(self, doc: ChatDoc | None = None) -> bool: ...


def turn_at(doc: ChatDoc, turn_id: str) -> int | None:
    """The position of the turn `turn_id` in `doc` now (None: it is no longer there)."""
    return next((i for i, turn in enumerate(doc.turns) if turn.id == turn_id), None)


def can_continue(doc: ChatDoc, index: int) -> bool:
    """Whether turn `index`'s answer can go on: the last turn, its answer stopped or cut."""
    reply = doc.turns[index].version.reply if index < len(doc.turns) else None
    return index == len(doc.turns) - 1 and reply is not None and reply.continuable


def run(chat: ActingChat, doc: ChatDoc, kind: Action, turn_id: str, text: str) -> bool | None:
    """Run the action on conversation `doc` (see the module guarantees)."""
    index = turn_at(doc, turn_id)
    if index is None:
        return None
    if kind == "regenerate":
        return chat.regenerate(index, doc)
    if kind == "edit":
        return chat.edit(index, text, doc)
    if not can_continue(doc, index):
        return None
    return chat.continue_reply(doc)


def described(kind: Kind, about: str, text: str) -> str:
    """The action in words ("↻ Regenerate the answer to “What is 2+2?”"); a message is its
    text. `about`: the turn's message when the action was asked; `text`: an edit's new text
    (each without the files' passages a message carries)."""
    about = " ".join(attachments.split(about)[1].split())
    if kind == "regenerate":
        return f"↻ Regenerate the answer to “{about}”"
    if kind == "continue":
        return f"▶ Continue the answer to “{about}”"
    if kind == "edit":
        return f"✎ Edit and resend: {attachments.split(text)[1]}"
    return text


def gone(kind: Kind, chat: str) -> str:
    """What the user is told when a queued action no longer applies."""
    what = {"regenerate": "regenerate", "edit": "edit", "continue": "continue"}.get(kind, "")
    return (
        f"The {what} queued in “{chat}” was not run: the message or answer it was for has "
        "changed since."
    )


__all__ = [
    "ACTIONS",
    "ActingChat",
    "Action",
    "Kind",
    "can_continue",
    "described",
    "gone",
    "run",
    "turn_at",
]
