"""Variables a GGUF's chat template may read beyond the conversation, as the runtimes that
render those templates give them.

Guarantees: `extra_variables(tools)` is the same for the same tools on the same day: `datetime`
("Nov 29 2026", as llama.cpp gives it every template; firefunction-v2 writes "Today is …"), and
`functions`, the declared functions as one JSON text (firefunction-v2 writes it under
"Available functions as JSON spec", as its own tokenizer's caller passed it; "[]" without
tools). `date_string` is left to each template's own default (Llama 3.x writes a fixed date
then), so such a prompt, and the prompt cache it keeps, does not change at midnight. A template
that defines one of these names itself (a macro's argument, a `set`) reads its own.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any


def extra_variables(tools: Sequence[dict[str, Any]] | None) -> dict[str, str]:
    """The variables above for a render with `tools` (OpenAI-shaped) declared."""
    functions = [t.get("function", t) for t in tools or ()]
    return {
        "datetime": dt.date.today().strftime("%b %d %Y"),
        "functions": json.dumps(functions, ensure_ascii=False, indent=4),
    }


__all__ = ["extra_variables"]
