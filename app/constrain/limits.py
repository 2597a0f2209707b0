"""The sizes JSON mode never goes beyond, in one place: what a schema may ask for, and how much
work the closer may do to build an ending.

Guarantees: every bound on hostile input that `app/constrain` applies is one of these names
(the refusals in `size.py`, the closer's budget in `minimal.py`, the regex sampler's); none is
read from the environment.
"""

from __future__ import annotations

MAX_COUNT = 1_000_000  # minItems, maxLength, …: more than any local model's context holds
MAX_ANSWER_CHARS = 1_000_000  # the smallest answer a schema may ask for, in characters
CHARS_PER_TOKEN = 16  # the most characters one token spells in compact JSON (a lower bound)
MAX_BUILT = 1 << 16  # the longest value text the closer builds (longer: it proposes nothing)
MAX_STEPS = 5_000  # subschemas the closer or the size bound visits for one value
MAX_DEPTH = 24  # nesting and `$ref` hops followed
COUNT_KEYWORDS = (
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
