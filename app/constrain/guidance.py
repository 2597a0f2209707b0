"""The constraint engine (llguidance) as JSON mode sees it: the grammar it makes of a schema,
and what it says it cannot take.

Guarantees: schemas reach the engine as compact JSON (no free whitespace, so a small model
cannot loop in blank space); a warning from the engine counts as a problem (a silent widening),
so nothing it would quietly drop goes unreported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}


def with_options(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as the engine reads it: compact JSON, no free whitespace."""
    return {**schema, "x-guidance": {**JSON_OPTIONS, **schema.get("x-guidance", {})}}


def compiled(lark: str) -> tuple[str, list[str]]:
    """The grammar llguidance makes of `lark`, and what it says about it: no problems when it
    takes the grammar without widening anything (a warning is a silent widening)."""
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_lark(lark)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    problems = [m.splitlines()[0] for m in messages if m] or (["rejected"] if is_error else [])
    return grammar, problems


def schema_problems(schema: Mapping[str, Any]) -> list[str]:
    """What the engine says about a JSON body for `schema` (nothing: it takes it whole)."""
    return compiled("start: body\nbody: %json " + json.dumps(with_options(schema)))[1]


@cache
def engine_reads(pattern: str) -> bool:
    """Whether the engine's regular expressions read `pattern`."""
    return not schema_problems({"type": "string", "pattern": pattern})
