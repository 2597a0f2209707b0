"""Secret redaction for anything shown or written for debugging: API keys never leave as text.

Guarantees: bearer tokens, `Authorization` headers, OpenAI-style `sk-…` keys, Databricks
`dapi…` tokens, the user and password of a URL (`https://user:pw@host`), values of keys named
like `api_key`, `token`, `secret` or `password`, and any secret the caller names (the key it
sent, which a server may echo) are replaced by `[redacted]`; the rest of the text is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PATTERNS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"()\bdapi[0-9a-f]{16,}(-\d+)?"),
    re.compile(
        r"(?i)([\"']?\b(?:api[_-]?key|access[_-]?token|token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}&]+"
    ),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s@:]*:[^/\s@]*@"),  # user:password@
]


def _replace(match: re.Match[str]) -> str:
    return match.group(1) + "[redacted]" + ("@" if match.group(0).endswith("@") else "")


def redact(text: str, known: Iterable[str | None] = ()) -> str:
    """`text` with every secret-looking value, and each of `known`, replaced by `[redacted]`."""
    for secret in known:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    for pattern in _PATTERNS:
        text = pattern.sub(_replace, text)
    return text
