"""Who answers a conversation, by the name its reply keeps: the model on this computer by its
readable name, or a remote endpoint and the model it was set up with ("☁ canned · gpt-4o").

Guarantees: a reply is credited to what wrote it — a conversation pointed at a remote endpoint
is never credited to the model loaded here (`model_names.answered_by`).
"""

from __future__ import annotations

from app.controllers.model_host import ModelHost
from app.controllers.remote_host import RemoteHost
from app.domain.model_names import answered_by


def answerer(host: ModelHost, remote: RemoteHost | None, endpoint: str | None) -> str:
    """The name a new reply in a conversation on `endpoint` (None: this computer) carries."""
    if endpoint is None or remote is None:
        return host.name
    model = next((e.model for e in remote.endpoints if e.name == endpoint), "")
    return answered_by(endpoint, model, host.name)


__all__ = ["answerer"]
