"""The format checks of the check after: jsonschema's, with `semver` and `url` added.

Guarantees: one checker for every JSON answer (built once); a value that is not a string
passes a string format, as JSON Schema says.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)


@cache
def format_checker() -> Any:
    """jsonschema's format checker, with `semver` and `url` besides the formats it knows."""
    from urllib.parse import urlsplit

    from jsonschema import FormatChecker

    checker = FormatChecker()

    @checker.checks("semver")
    def _semver(value: object) -> bool:
        return not isinstance(value, str) or bool(_SEMVER.match(value))

    @checker.checks("url")
    def _url(value: object) -> bool:
        if not isinstance(value, str):
            return True
        parts = urlsplit(value)
        return bool(parts.scheme and (parts.netloc or parts.scheme in ("mailto", "file")))

    return checker
