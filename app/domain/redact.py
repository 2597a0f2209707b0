"""Secret redaction — the one function for anything stored, logged, audited, shown or sent to a
model: a secret never leaves as text.

Guarantees: `redact` replaces with `[redacted]`
- every value the app knows is secret: each one `remember`ed (every keyring value the app reads
  or writes is, through `app.secrets`), each the caller names, and the value of each variable of
  the app's environment whose name says it is secret (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`);
- secret shapes: bearer tokens, `Authorization` headers, OpenAI `sk-…`, Databricks `dapi…`,
  GitHub `ghp_…`/`gho_…`/`github_pat_…`, Hugging Face `hf_…`, Slack `xox?-…`, AWS `AKIA…`,
  GitLab `glpat-…`, Google `AIza…`, PEM private keys, the user and password of a URL
  (`postgres://user:pw@host`), URL parameters like `?key=`/`&sig=`, values after names like
  `api_key`, `*_SECRET`, `aws_secret_access_key =`, `password:`, and after flags like
  `--api-key`/`--token`;
the rest of the text is unchanged. `redact_data` does the same to every string in JSON-like
data; `looks_secret` says whether a text holds a secret shape. Linear time: no shape backtracks
over its input (a name's letters around its secret word are bounded, and it is tried at the
start of a word only), and a shape is looked for only in a text holding the words it cannot
match without; a megabyte of any text is redacted in a fraction of a second (the redaction
corpus test holds the bound). An error's words are never rewritten: its class is not a
secret's name (`OAuthTokenError: Token exchange failed` stays as it is), nor is an OAuth error
code (`invalid_token: The access token expired`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import Any

MARK = "[redacted]"
_NAME = r"(?:api[_-]?key|access[_-]?key|token|secret|passw(?:or)?d|credentials?|private[_-]?key)"
SECRET_NAME = re.compile(_NAME, re.I)  # a name that says its value is secret
# an OAuth error code names no secret: `invalid_token: The access token expired` keeps its words
_CODES = r"(?:invalid|insufficient|expired|unsupported|unauthorized)_"
_AROUND = 40  # characters a secret's name may have around the word that says so
_PATTERNS = [
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(basic\s+)[A-Za-z0-9+/=]{8,}"),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"()\bdapi[0-9a-f]{16,}(-\d+)?"),
    re.compile(r"()\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"()\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"()\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"()\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"()\bglpat-[A-Za-z0-9_-]{20,}"),
    re.compile(r"()\bAIza[0-9A-Za-z_-]{35}"),
    re.compile(
        r"()-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
    ),
    # a name that says "secret", then `:` or `=`, then its value; the name starts a word (so a
    # long word is tried once, not at each of its letters: linear time) and is not an error's
    # class (`OAuthTokenError: Token exchange failed` keeps its words)
    re.compile(
        rf"(?i)((?<![A-Za-z0-9_.-])[\"']?(?!{_CODES})[A-Za-z0-9_.-]{{0,{_AROUND}}}{_NAME}"
        rf"[A-Za-z0-9_.-]{{0,{_AROUND}}}(?<!tokens)(?<!error)(?<!exception)[\"']?\s{{0,8}}[:=]"
        r"\s{0,8}[\"']?)[^\s\"',}&\[{][^\s\"',}&]*"
    ),
    re.compile(
        rf"(?i)((?<![\w-])--?[a-z0-9-]{{0,{_AROUND}}}{_NAME}[a-z0-9-]{{0,{_AROUND}}}(?<!tokens)"
        r"\s{1,8})[^\s\"'-][^\s\"']*"
    ),
    re.compile(r"(?i)([?&#;](?:key|sig|signature|code|auth)=)[^&#\s\"']+"),
    re.compile(r"(?i)((?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://)[^/\s@:]*:[^/\s@]*@"),  # user:pw@
]
# what each shape cannot match without (lowercase): a text without any is not scanned for it
_SAID = ("key", "token", "secret", "passw", "credential")
_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("bearer",),
    ("basic",),
    ("authorization",),
    ("sk-",),
    ("dapi",),
    ("gh", "github_pat_"),
    ("hf_",),
    ("xox",),
    ("akia", "asia"),
    ("glpat-",),
    ("aiza",),
    ("private key-----",),
    _SAID,
    _SAID,
    ("key=", "sig=", "signature=", "code=", "auth="),
    ("://",),
)
_known: set[str] = set()
_lock = threading.Lock()


def remember(secret: str | None) -> None:
    """Redact `secret` from now on, wherever it appears (a value shorter than 4: ignored)."""
    if secret and len(secret.strip()) >= 4:
        with _lock:
            _known.add(secret.strip())


def known_secrets() -> list[str]:
    """Every value remembered, and the app environment's secret-named values; longest first."""
    env = [v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 8]
    with _lock:
        found = {*_known, *env}
    return sorted(found, key=len, reverse=True)


def _replace(match: re.Match[str]) -> str:
    return match.group(1) + MARK + ("@" if match.group(0).endswith("@") else "")


def redact(text: str, known: Iterable[str | None] = (), *, shapes: bool = True) -> str:
    """`text` with every secret it holds, and each of `known`, replaced by `[redacted]`;
    `shapes=False` replaces the known values only (a tool's result, kept faithful)."""
    extra = sorted((s for s in known if s and len(s) >= 4), key=len, reverse=True)
    for secret in [*extra, *known_secrets()]:
        text = text.replace(secret, MARK)
    if shapes:
        lowered = text.lower()
        for pattern, needles in zip(_PATTERNS, _NEEDLES, strict=True):
            if any(n in lowered for n in needles):  # a shape is looked for only where it may be
                text = pattern.sub(_replace, text)
    return text


def redact_data(data: Any, known: Iterable[str | None] = (), *, shapes: bool = True) -> Any:
    """`data` (JSON-like: dicts, lists, strings…) with `redact` applied to every string in it."""
    known = list(known)
    if isinstance(data, str):
        return redact(data, known, shapes=shapes)
    if isinstance(data, dict):
        return {
            redact_data(k, known, shapes=shapes): redact_data(v, known, shapes=shapes)
            for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return [redact_data(v, known, shapes=shapes) for v in data]
    return data


def looks_secret(text: str) -> bool:
    """Whether `text` holds a secret shape (known values aside)."""
    lowered = text.lower()
    return any(
        p.search(text)
        for p, needles in zip(_PATTERNS, _NEEDLES, strict=True)
        if any(n in lowered for n in needles)
    )


__all__ = [
    "MARK",
    "SECRET_NAME",
    "known_secrets",
    "looks_secret",
    "redact",
    "redact_data",
    "remember",
]
