"""Secret redaction for anything shown or written for debugging: API keys never leave as text.

Guarantees: bearer tokens, `Authorization` headers, OpenAI-style `sk-…` keys, Databricks
`dapi…` tokens, and values of keys named like `api_key`, `token`, `secret` or `password` are
replaced by `[redacted]`; the rest of the text is unchanged.
"""

from __future__ import annotations

import re

_PATTERNS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"()\bdapi[0-9a-f]{16,}(-\d+)?"),
    re.compile(
        r"(?i)([\"']?\b(?:api[_-]?key|access[_-]?token|token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"
    ),
]


def redact(text: str) -> str:
    """`text` with every secret-looking value replaced by `[redacted]`."""
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "[redacted]", text)
    return text
