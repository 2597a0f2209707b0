"""A remote endpoint as the settings keep it: where it is, which model, default parameters.

Guarantees: names are short and plain (they name keyring entries and command-line arguments);
the base URL is http(s) and carries no secret — no `user:password@`, no query or fragment
parameter named like a key (`?api_key=`, `#token=`), nothing secret-shaped in its path, query
or fragment (`/sk-…/`, `hf_…`: `app.domain.redact.looks_secret`); parameters are in the ranges
the chat-completion API accepts; `context`, when set, is the model's context on this endpoint
(between `MIN_CONTEXT` and `MAX_CONTEXT` tokens), and wins over what its server says; there is
no field for the API key: it lives in the OS keyring, under `key_name`.
"""

from __future__ import annotations

import urllib.parse

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.domain.redact import looks_secret

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MIN_CONTEXT, MAX_CONTEXT = 256, 1 << 24  # tokens an endpoint's context may be set to


class Endpoint(BaseModel):
    """One OpenAI-compatible endpoint (Databricks serving endpoint, vLLM, Ollama, OpenAI...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    base_url: str = Field(pattern=r"^https?://\S+$")
    model: str = Field(min_length=1)
    key_name: str | None = Field(default=None, pattern=NAME_PATTERN)  # None: no key needed
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)  # asks for logprobs when set
    timeout_s: float = Field(default=60.0, gt=0)
    retries: int = Field(default=3, ge=0, le=10)
    # the call format the model writes, for a server that passes calls through as text
    # (`hermes`, `llama3`, …: a template family's); None: the server returns tool_calls itself
    tool_calls: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,31}$")
    text_calls: bool = Field(
        default=False,
        description="Read tool calls from Harmony markup in the answer's text, for a server that"
        " passes gpt-oss output through unparsed (off: calls come only from the API's tool_calls;"
        " markup that writes one stays text and is never run)",
    )
    context: int | None = Field(
        default=None,
        ge=MIN_CONTEXT,
        le=MAX_CONTEXT,
        description="The model's context on this endpoint, in tokens (none: what its server"
        " says when asked, else 8,192)",
    )

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, url: str) -> str:
        """A key written into the URL would be stored and printed with it: refused."""
        return url_without_credentials(url)


_SECRET_PARAMS = ("key", "token", "secret", "password", "passwd", "auth", "sig", "credential")


def url_without_credentials(url: str) -> str:
    """`url` unchanged, or a `ValueError` saying how to keep the secret it carries instead."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "the URL carries a user name or password (user:password@); remove it and keep the"
            " key in the keyring (--key-name, then `harmony-desk keys set NAME`)"
        )
    for where, text in (("query", parts.query), ("fragment", parts.fragment)):
        for name, _value in urllib.parse.parse_qsl(text, keep_blank_values=True):
            if any(word in name.lower() for word in _SECRET_PARAMS):
                raise ValueError(
                    f"the URL carries a secret in its {where} ({name}=…); remove it and keep the"
                    " key in the keyring (--key-name, then `harmony-desk keys set NAME`)"
                )
    for where, text in (("path", parts.path), ("query", parts.query), ("fragment", parts.fragment)):
        if looks_secret(urllib.parse.unquote(text).replace("/", " ")):
            raise ValueError(
                f"the URL's {where} holds something shaped like a key; remove it and keep the key"
                " in the keyring (--key-name, then `harmony-desk keys set NAME`)"
            )
    return url


__all__ = ["MAX_CONTEXT", "MIN_CONTEXT", "NAME_PATTERN", "Endpoint", "url_without_credentials"]
