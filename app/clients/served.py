"""What a running server says it serves, for `harmony-desk connect`: the model a client should
name and the context the server gives it, read from the server's own `GET /v1/models`.

Guarantees: one GET with the key as a bearer token, within `TIMEOUT_S`; a server that does not
answer, answers other than 200, or lists no loaded model with its context (`n_ctx`, as ours
lists each loaded model; llama-server lists none) gives `None`, never an error: connect then
estimates as before. With a name asked, only the loaded model of that name counts; without one,
the first loaded chat model (ours lists the default first). A listed size that is not a positive
whole number is not taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Listed:
    """A loaded model as the server lists it: its name and its context in tokens."""

    name: str
    context: int


def served_model(root: str, key: str, name: str | None = None) -> Listed | None:
    """The model the server at `root` serves by `name` (any loaded chat model when `name` is
    None), or None (see the module guarantees)."""
    import httpx2

    try:
        answer = httpx2.get(
            f"{root}/v1/models",
            headers={"Authorization": f"Bearer {key}"},
            timeout=TIMEOUT_S,
            follow_redirects=False,
        )
        listed = answer.json() if answer.status_code == 200 else None
    except (httpx2.HTTPError, ValueError):
        return None
    return pick(listed, name)


def pick(listed: Any, name: str | None) -> Listed | None:
    """The entry of a `/v1/models` answer that `served_model` takes, if any."""
    entries = listed.get("data") if isinstance(listed, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not _chats(entry):
            continue
        context, model = entry.get("n_ctx"), entry.get("id")
        if not isinstance(model, str) or (name is not None and model != name):
            continue
        if isinstance(context, int) and not isinstance(context, bool) and context > 0:
            return Listed(model, context)
    return None


def _chats(entry: dict[str, Any]) -> bool:
    """A loaded model that answers chat requests (not an embedding model, not one listed as
    loading on request)."""
    status = entry.get("status")
    loaded = not isinstance(status, dict) or status.get("value") == "loaded"
    architecture = entry.get("architecture")
    outputs = architecture.get("output_modalities") if isinstance(architecture, dict) else None
    return loaded and (not isinstance(outputs, list) or "text" in outputs)


__all__ = ["TIMEOUT_S", "Listed", "pick", "served_model"]
