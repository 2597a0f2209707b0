"""The reasoning efforts OpenAI's APIs name, as the efforts a template takes, and the notes
the warning header carries.

Guarantees: every effort OpenAI defines is accepted (`OpenAIEffort`; any other word is the
wire model's 400); one a template has no word for is taken as the nearest it has (`none` and
`minimal` as `low`, `xhigh` and `max` as `high`) and said so in the `X-Harmony-Desk-Warning`
header (`taken_as`), never silently — unless the effort is not applied at all, which the header
already says. One mapping, shared by chat completions and the Responses API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

OpenAIEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
TAKEN_AS = {"none": "low", "minimal": "low", "xhigh": "high", "max": "high"}


def nearest(effort: str | None) -> str | None:
    """The effort a template takes for `effort` (None when none is asked)."""
    return TAKEN_AS.get(effort, effort) if effort else None


def taken_as(effort: str | None, field: str, ignored: Sequence[str]) -> str | None:
    """What the header says of an effort taken as another (None when it is taken as asked,
    or `field` is among the `ignored`)."""
    if effort not in TAKEN_AS or field in ignored:
        return None
    return f'{field} "{effort}" is taken as "{TAKEN_AS[effort]}", the nearest this server has'


def said(*notes: str | None) -> str | None:
    """The notes given, as one warning (None when there are none)."""
    return "; ".join(note for note in notes if note) or None


__all__ = ["TAKEN_AS", "OpenAIEffort", "nearest", "said", "taken_as"]
