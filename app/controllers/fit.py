"""Whether a message fits the context: counted before it is sent.

Guarantees: with the model on this computer the message is counted by the model's own
tokenizer, on the engine thread (`measure` must run there), and the room is what the context
holds after the conversation so far (instructions included), the message's own wrapping and
the answer's reserve (`max_tokens`), as the turn will render it (under a policy that leaves
older exchanges out, beside what it always keeps); with a remote endpoint both
are estimated at four characters a token and said to be estimates. `larger_context` is the
smallest context (a multiple of 4,096 tokens) that holds the conversation, the message and the
reserve, or None when the model was not trained for that many tokens. `document_room` is what
attached documents may take beside the message: the room less `follow_up_room` (the answer kept
in the history and a follow-up of `FOLLOW_UP` tokens), which attaching always leaves free.
`paste_file` keeps an over-long message as a private text file to attach instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from app.controllers.model_host import ModelHost
from app.domain.attachments import ESTIMATED_CONTEXT, estimate
from app.domain.budget import Overflow, reserve_for
from app.engine.overflow import kept_always
from app.fileio import private_folder, write_atomic
from app.paths import cache_dir

if TYPE_CHECKING:
    from app.controllers.remote_host import RemoteHost
    from app.domain.history import ChatDoc
    from app.domain.messages import Conversation
    from app.engine.local.session import ChatSession

STEP = 4096  # contexts offered grow in steps of this many tokens
FOLLOW_UP = 256  # tokens an attachment leaves for a follow-up question, besides two answers


def follow_up_room(reserve: int, n_ctx: int) -> int:
    """The tokens a message with attachments leaves free besides its own answer's reserve:
    room for that answer to stay in the history, and a follow-up (`FOLLOW_UP`)."""
    return reserve_for(reserve, n_ctx) + FOLLOW_UP


@dataclass(frozen=True)
class Fit:
    """A message's size against the room the context has for it."""

    tokens: int  # the message
    room: int  # tokens a message may have in this conversation now
    n_ctx: int  # the context the model was loaded with
    trained: int  # the context the model was trained for (0: not known)
    estimated: bool  # a remote endpoint: counted at four characters a token
    reserve: int = 0  # the answer's reserve, held besides `room`

    @property
    def fits(self) -> bool:
        return self.tokens <= self.room

    def document_room(self) -> int:
        """The tokens attached documents may take here (see the module guarantees)."""
        return max(0, self.room - follow_up_room(self.reserve, self.n_ctx))

    def larger_context(self) -> int | None:
        """The smallest context that holds this message here, or None (beyond the model)."""
        needed = self.n_ctx - self.room + self.tokens
        size = -(-needed // STEP) * STEP
        return None if self.estimated or (self.trained and size > self.trained) else size

    def summary(self) -> str:
        """ "312 tokens · 3,400 left" (an estimate says "about")."""
        about = "about " if self.estimated else ""
        tokens = "1 token" if self.tokens == 1 else f"{self.tokens:,} tokens"
        return f"{about}{tokens} · {max(0, self.room - self.tokens):,} left"


class Counted(Protocol):
    """What a count needs of the chat controller (passed in: never imported here)."""

    doc: ChatDoc
    host: ModelHost
    remote: RemoteHost | None
    max_tokens: int
    overflow: Overflow  # the settings' default policy
    busy: bool


def estimated_context(controller: Counted) -> int:
    """The context a count is estimated against: the chat's endpoint's, when it says (set on
    the endpoint: `endpoints add --context`), else the loaded model's, else `ESTIMATED_CONTEXT`."""
    name, remote = controller.doc.endpoint, controller.remote
    if name is not None:
        found = next((e for e in remote.endpoints if e.name == name), None) if remote else None
        return found.context if found is not None and found.context else ESTIMATED_CONTEXT
    return controller.host.n_ctx or ESTIMATED_CONTEXT


def conversation_session(controller: Counted, max_tokens: int) -> tuple[ChatSession, Conversation]:
    """A session of the loaded model, and the selected conversation so far (engine thread)."""
    doc = controller.doc
    session = controller.host.session(max_tokens=max_tokens)
    return session, session.conversation.with_messages(doc.prompt_messages())


def measure(controller: Counted, text: str) -> Fit:
    """How `text` fits the selected conversation (on the engine thread): under a policy that
    leaves older exchanges out, what it always keeps is what the message must fit beside."""
    host = controller.host
    if controller.doc.endpoint is None and host.ready:
        session, conversation = conversation_session(controller, controller.max_tokens)
        policy = controller.doc.overflow or controller.overflow
        kept = kept_always(conversation, policy)
        trained = host.info.n_ctx_train if host.info is not None else 0
        room = session.room("", kept)
        return Fit(session.count(text), room, host.n_ctx, trained, False, controller.max_tokens)
    n_ctx, reserve = estimated_context(controller), controller.max_tokens
    return Fit(estimate(text), n_ctx - reserve - estimate(""), n_ctx, 0, True, reserve)


async def fit_of(controller: Counted, text: str) -> Fit:
    """How `text` fits, counted on the engine thread when it is free and the model is here;
    estimated while an answer streams (the engine thread is busy) or for an endpoint."""
    host = controller.host
    if controller.busy or controller.doc.endpoint is not None or not host.ready:
        n_ctx, reserve = estimated_context(controller), controller.max_tokens
        return Fit(estimate(text), n_ctx - reserve, n_ctx, 0, True, reserve)
    return await host.bridge.call(partial(measure, controller, text))


def paste_file(text: str) -> Path:
    """`text` as a private file to attach ("pasted-20261125-2130.txt" in the cache folder)."""
    folder = cache_dir() / "pasted"
    private_folder(folder)
    path = folder / time.strftime("pasted-%Y%m%d-%H%M%S.txt")
    write_atomic(path, text)
    return path


__all__ = [
    "FOLLOW_UP",
    "STEP",
    "Counted",
    "Fit",
    "conversation_session",
    "fit_of",
    "follow_up_room",
    "measure",
    "paste_file",
]
