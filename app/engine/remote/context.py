"""A remote endpoint's context length, as its server says it.

Guarantees: `stated` reads one model-list entry for the context the server runs the model with,
in the words each server uses — vLLM's `max_model_len`, LM Studio's `loaded_context_length`
(else its `max_context_length`), the `n_ctx` of llama-server's router and of this app's own
server, OpenRouter's and others' `context_length` (or `top_provider.context_length`), Groq's
`context_window` — and llama-server's `meta.n_ctx_train` last (what the model was trained for,
not what the server runs it at: llama-server's `/props` `n_ctx` is asked then, and wins). `learn`
asks the endpoint's model list (`GET {base}/models`) for its model's entry, through the SDK
client (so the key goes only where the SDK sends it), at most once per call, with a short
deadline and no retries, and never raises: a server that lists nothing, says nothing, or does
not answer is `None` (the app then assumes `ESTIMATED_CONTEXT`, or the endpoint's `context`
when the user set one, which always wins over what a server says).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.domain.endpoint import Endpoint

LEARN_TIMEOUT_S = 10.0  # the most a model list (and llama-server's /props) may take
# the fields that state a running context, the most exact first: (path, as said to the user)
RUNNING = (
    (("max_model_len",), "max_model_len"),
    (("loaded_context_length",), "loaded_context_length"),
    (("n_ctx",), "n_ctx"),
    (("context_length",), "context_length"),
    (("top_provider", "context_length"), "top_provider.context_length"),
    (("max_context_length",), "max_context_length"),
    (("context_window",), "context_window"),
)
TRAINED = (("meta", "n_ctx_train"), "meta.n_ctx_train")  # llama-server: ask /props as well


@dataclass(frozen=True)
class Learned:
    """A context the server stated (tokens), and the field that said it."""

    tokens: int
    field: str

    def said(self) -> str:
        return f"{self.tokens:,} tokens (its {self.field})"


def stated(entry: Mapping[str, Any]) -> Learned | None:
    """The context one model-list entry states (see the module guarantees)."""
    for path, name in (*RUNNING, TRAINED):
        tokens = _at(entry, path)
        if tokens is not None:
            return Learned(tokens, name)
    return None


def _at(entry: Mapping[str, Any], path: tuple[str, ...]) -> int | None:
    value: Any = entry
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        return None
    return int(value)


def entries(client: Any) -> list[dict[str, Any]]:
    """The server's model list, each entry as the JSON it sent ([] when it lists none)."""
    listed = []
    for model in client.models.list():
        as_dict = getattr(model, "to_dict", None)
        listed.append(as_dict() if callable(as_dict) else dict(vars(model)))
    return listed


def learn(endpoint: Endpoint, client: Any) -> Learned | None:
    """What `endpoint`'s server says its model's context is (None: it does not say)."""
    quick = _quick(client, min(endpoint.timeout_s, LEARN_TIMEOUT_S))
    try:
        listed = entries(quick)
    except Exception:  # a server that lists no models (Databricks), or none answering
        return None
    return listed_context(endpoint, listed, quick)


def listed_context(endpoint: Endpoint, listed: list[dict[str, Any]], client: Any) -> Learned | None:
    """What the model list `listed` says of `endpoint`'s model's context (llama-server's
    `/props` asked through `client` where the list says only what the model was trained for)."""
    entry = next((e for e in listed if e.get("id") == endpoint.model), None)
    if entry is None and len(listed) == 1:
        entry = listed[0]  # one model served, whatever it is called (llama-server, LM Studio)
    if entry is None:
        return None
    found = stated(entry)
    if found is None or found.field != TRAINED[1]:
        return found
    return _props(endpoint, _quick(client, min(endpoint.timeout_s, LEARN_TIMEOUT_S))) or found


def _props(endpoint: Endpoint, client: Any) -> Learned | None:
    """llama-server's running context, from its `/props` (at the server's root)."""
    root = endpoint.base_url.rstrip("/").removesuffix("/v1")
    try:
        props = client.get(f"{root}/props", cast_to=object)
    except Exception:  # not llama-server after all, or an old one
        return None
    if not isinstance(props, Mapping):
        return None
    for where in (props.get("default_generation_settings"), props):  # newer, then older
        tokens = _at(where, ("n_ctx",)) if isinstance(where, Mapping) else None
        if tokens is not None:
            return Learned(tokens, "/props n_ctx")
    return None


def _quick(client: Any, timeout_s: float) -> Any:
    """`client` with a short deadline and no retries (a test double as it is)."""
    with_options = getattr(client, "with_options", None)
    if not callable(with_options):
        return client
    return with_options(timeout=timeout_s, max_retries=0)


__all__ = ["LEARN_TIMEOUT_S", "Learned", "entries", "learn", "listed_context", "stated"]
