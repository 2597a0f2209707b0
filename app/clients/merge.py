"""Changes into a configuration's data (`merge`), and back out of it (`unmerge`).

Guarantees: neither mutates what it is given; `merge` touches only the keys the changes name
(a leaf is set, a `Whole` table replaced, an `Upsert` entry replaced or appended, a `Default`
set where the key is missing) and lists each one whose value it changed, with the value it
had, so the caller can say exactly what changed; merging twice changes nothing the second time.
A key whose value is not what the change needs (a string where a table must go) is refused
with an `InvalidInputError`, never overwritten. `unmerge` removes what the changes name (any
value, as a file with no backup holds ours), prunes the tables it emptied, and gives None when
nothing but the `Default`s is left: the file holds nothing of the user's. A `Whole` with `ours`
takes out every entry beside it that `ours` accepts, under any key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.clients import Changes, Default, Upsert, Whole
from app.errors import InvalidInputError


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # where a key had (or has) no value


@dataclass(frozen=True)
class Change:
    """One key changed: where (`env.ANTHROPIC_MODEL`, `models[name=Harmony Desk]`), what it
    was and what it is (either may be `MISSING`)."""

    where: str
    old: Any
    new: Any


def empty(changes: Changes | Upsert) -> Any:
    """The data of a file that does not exist yet: a list for a file that is one, else a table."""
    return [] if isinstance(changes, Upsert) else {}


def merge(data: Any, changes: Changes | Upsert) -> tuple[Any, list[Change]]:
    """`data` with `changes` made, and the changes that altered it."""
    made: list[Change] = []
    if isinstance(changes, Upsert):
        return _upsert(_list(data, "the file"), changes, "", made), made
    return _merge(_table(data, "the file"), changes, "", made), made


def unmerge(data: Any, changes: Changes | Upsert) -> tuple[Any, list[Change]]:
    """`data` without what `changes` set, and what was removed; None for data that is then
    nothing of the user's."""
    removed: list[Change] = []
    if isinstance(changes, Upsert):
        left: Any = _drop_entry(_list(data, "the file"), changes, "", removed)
        return (left or None), removed
    left = _unmerge(_table(data, "the file"), changes, "", removed)
    defaults = {k for k, v in changes.items() if isinstance(v, Default)}
    return (None if set(left) <= defaults else left), removed


def _merge(table: dict[str, Any], changes: Changes, where: str, made: list[Change]) -> Any:
    result = dict(table)
    for key, want in changes.items():
        here, have = _join(where, key), result.get(key, MISSING)
        if isinstance(want, Default):
            value = want.value if have is MISSING else have
        elif isinstance(want, Whole):
            value = dict(want.value)
        elif isinstance(want, Upsert):
            value = _upsert(_list(have, here), want, here, made)
        elif isinstance(want, Mapping):
            value = _merge(_table(have, here), want, here, made)
        else:
            value = want
        if not isinstance(want, Upsert | Mapping) and not same(have, value):
            made.append(Change(here, have, value))
        result[key] = value
    return result


def _upsert(items: list[Any], want: Upsert, where: str, made: list[Change]) -> list[Any]:
    here = f"{where}[{want.field}={want.entry[want.field]}]"
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and same(item.get(want.field), want.entry[want.field]):
            if not same(item, want.entry):
                made.append(Change(here, item, dict(want.entry)))
            return [*items[:i], dict(want.entry), *items[i + 1 :]]
    made.append(Change(here, MISSING, dict(want.entry)))
    return [*items, dict(want.entry)]


def _unmerge(table: dict[str, Any], changes: Changes, where: str, removed: list[Change]) -> Any:
    result = dict(table)
    for key, want in changes.items():
        here, have = _join(where, key), result.get(key, MISSING)
        if isinstance(want, Default) or (have is MISSING and not isinstance(want, Whole)):
            continue
        if isinstance(want, Upsert) and isinstance(have, list):
            result[key] = _drop_entry(have, want, here, removed)
        elif isinstance(want, Mapping) and isinstance(have, dict):
            result[key] = _unmerge(have, want, here, removed)
        elif have is not MISSING and not isinstance(want, Upsert | Mapping):
            removed.append(Change(here, have, MISSING))
            del result[key]
        if key in result and not result[key] and have:
            del result[key]  # a table or a list only ours had
        if isinstance(want, Whole) and want.ours is not None:
            for other in [k for k, v in result.items() if want.ours(v)]:
                removed.append(Change(_join(where, other), result.pop(other), MISSING))
    return result


def _drop_entry(items: list[Any], want: Upsert, where: str, removed: list[Change]) -> list[Any]:
    here = f"{where}[{want.field}={want.entry[want.field]}]"
    key = want.entry[want.field]
    ours = [isinstance(i, Mapping) and same(i.get(want.field), key) for i in items]
    removed += [Change(here, item, MISSING) for item, mine in zip(items, ours, strict=True) if mine]
    return [item for item, mine in zip(items, ours, strict=True) if not mine]


def same(a: Any, b: Any) -> bool:
    """Equal as the file holds them: `true` is not `1`, `1` is not `1.0`."""
    if a is MISSING or b is MISSING:
        return a is b
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is MISSING or value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where} holds {_kind(value)} where a table must be")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is MISSING or value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError(f"{where} holds {_kind(value)} where a list must be")
    return value


KINDS: dict[type, str] = {dict: "a table", list: "a list", str: "a string"}


def _kind(value: Any) -> str:
    return KINDS.get(type(value)) or type(value).__name__


__all__ = ["MISSING", "Change", "empty", "merge", "same", "unmerge"]
