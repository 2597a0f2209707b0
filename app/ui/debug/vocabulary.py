"""Whose vocabulary the debug pane reads token ids with, and whether a reply's ids may be read
with it.

Guarantees: a reply's prompt and generated ids are decoded only with the vocabulary of the
model that wrote them — the reply's model and the vocabulary's are compared by their readable
names (`model_names.same_model`); a reply by another model (or a remote endpoint) gets a
sentence saying who answered and how to see its tokens instead, never another model's text; a
reply that names no model (saved before replies named theirs) is read as before.
"""

from __future__ import annotations

from app.controllers.chat import ChatController
from app.domain.history import Reply
from app.domain.model_names import is_remote, readable, same_model


def vocabulary_of(controller: ChatController) -> str:
    """The model the controller's token table is of ("": not read for the loaded model)."""
    host = controller.host
    read = controller.vocab_of is not None and controller.vocab_of is host.backend
    return host.name if read else ""


def unreadable(reply: Reply, vocabulary: str, loaded: str) -> str:
    """Why `reply`'s ids cannot be read with `vocabulary` (the loaded model is `loaded`), or ""
    when they can."""
    model = reply.model
    if not model or same_model(model, vocabulary):
        return ""
    who = readable(model)
    if is_remote(model):
        return f"Answered by {who}: its prompt's tokens are that server's, not shown here."
    if same_model(model, loaded):
        return f"Answered by {who}; its tokens show once it has answered in this session."
    return f"Answered by {who}; load it to see its tokens."


__all__ = ["unreadable", "vocabulary_of"]
