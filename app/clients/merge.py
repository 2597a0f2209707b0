"""Changes into a configuration's document (`merge`), and back out of it (`unmerge`).

A document is what `formats.load` gives (plain JSON data, or a TOML or YAML document that keeps
its comments); both functions work on a copy and change it only through `nodes`, so what they do
not touch keeps its comments, order and layout.

Guarantees: neither mutates what it is given; `merge` touches only the keys the changes name (a
leaf is set, a `Whole` table replaced, an `Upsert` entry replaced or appended, a `Default` set
where the key is missing) and lists each one whose value it changed, with the value it had, so
the caller can say exactly what changed; merging twice changes nothing the second time. A key
whose value is not what the change needs (a string where a table must go) is refused with an
`InvalidInputError`, never overwritten. `unmerge` takes out what the changes name and puts back,
from `original` (the file before connect's first change), the value each of those keys had
there: a key the original did not have is removed (any value: connect set it), one it had gets
that value again, and everything else in the document, the user's later edits included, stays;
it prunes the tables and lists it emptied that the original did not have. A `Default` goes only
where there is an original that lacked it and the value is still connect's (without one, the
file was connect's, and a file the user kept needs it). A `Whole` with `ours` also takes out
every entry beside it that `ours` accepts and the original did not have. `only_defaults` says
whether a document holds nothing of the user's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from app.clients import Changes, Default, Upsert, Whole
from app.clients.nodes import append, copied, drop, plain, pop, put, replace
from app.errors import InvalidInputError


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # where a key had (or has) no value


@dataclass(frozen=True)
class Change:
    """One key changed: where (`env.ANTHROPIC_MODEL`, `models[name=Harmony Desk]`), what it
    was and what it is (either may be `MISSING`), as plain data."""

    where: str
    old: Any
    new: Any


def merge(data: Any, changes: Changes | Upsert) -> tuple[Any, list[Change]]:
    """A copy of `data` with `changes` made, and the changes that altered it."""
    document, made = copied(data), list[Change]()
    if isinstance(changes, Upsert):
        _upsert(_list(document, "the file"), changes, "", made)
    else:
        _merge(_table(document, "the file"), changes, "", made)
    return document, made


def unmerge(data: Any, changes: Changes | Upsert, original: Any = None) -> tuple[Any, list[Change]]:
    """A copy of `data` without what `changes` set, the values `original` had there put back;
    and what was taken out or put back."""
    document, done = copied(data), list[Change]()
    if isinstance(changes, Upsert):
        entries = original if isinstance(original, list) else []
        _take_entry(_list(document, "the file"), changes, entries, "", done)
    else:
        table = original if isinstance(original, Mapping) else {}
        _unmerge(_table(document, "the file"), changes, table, "", done, original is None)
    return document, done


def shape(changes: Changes | Upsert) -> Literal["table", "list"]:
    """What a file of `changes` holds at its top: a list for a file that is one (llm's)."""
    return "list" if isinstance(changes, Upsert) else "table"


def only_defaults(document: Any, changes: Changes | Upsert) -> bool:
    """Whether `document` holds nothing but the `Default`s of `changes`, as they set them."""
    if isinstance(changes, Upsert) or not isinstance(document, Mapping):
        return not document
    return all(
        isinstance(changes.get(key), Default) and same(value, changes[key].value)
        for key, value in document.items()
    )


def _merge(table: Any, changes: Changes, where: str, made: list[Change]) -> None:
    for key, want in changes.items():
        here, have = _join(where, key), table.get(key, MISSING)
        if isinstance(want, Upsert | Mapping):
            if have is MISSING:
                inner: Any = [] if isinstance(want, Upsert) else {}
                _into(inner, want, here, made)
                put(table, key, inner)
            else:
                _into(have, want, here, made)
            continue
        if isinstance(want, Default):
            value = want.value if have is MISSING else have
        else:
            value = copy.deepcopy(dict(want.value) if isinstance(want, Whole) else want)
        if not same(have, value):
            made.append(Change(here, plain(have), plain(value)))
            put(table, key, value)


def _into(have: Any, want: Upsert | Changes, where: str, made: list[Change]) -> None:
    if isinstance(want, Upsert):
        _upsert(_list(have, where), want, where, made)
    else:
        _merge(_table(have, where), want, where, made)


def _upsert(items: Any, want: Upsert, where: str, made: list[Change]) -> None:
    here, entry = _entry_where(where, want), copy.deepcopy(dict(want.entry))
    for i, item in enumerate(items):
        if _is_entry(item, want):
            if not same(item, entry):
                made.append(Change(here, plain(item), plain(entry)))
                replace(items, i, entry)
            return
    made.append(Change(here, MISSING, plain(entry)))
    append(items, entry)


def _unmerge(
    table: Any,
    changes: Changes,
    before: Mapping[Any, Any],
    where: str,
    done: list[Change],
    keep_defaults: bool,
) -> None:
    for key, want in changes.items():
        here, have = _join(where, key), table.get(key, MISSING)
        was = before.get(key, MISSING)
        if isinstance(want, Default):
            if not keep_defaults and was is MISSING and same(have, want.value):
                _put_back(table, key, have, was, here, done)
        elif isinstance(want, Upsert):
            if isinstance(have, list):
                _take_entry(have, want, was if isinstance(was, list) else [], here, done)
                _prune(table, key, was)
        elif isinstance(want, Mapping):
            if isinstance(have, Mapping):
                inner = was if isinstance(was, Mapping) else {}
                _unmerge(have, want, inner, here, done, keep_defaults)
                _prune(table, key, was)
        else:
            _put_back(table, key, have, was, here, done)
        if isinstance(want, Whole) and want.ours is not None:
            for other in [k for k in table if k not in before and want.ours(plain(table[k]))]:
                done.append(Change(_join(where, other), plain(table[other]), MISSING))
                drop(table, other)


def _put_back(table: Any, key: str, have: Any, was: Any, here: str, done: list[Change]) -> None:
    if was is MISSING and have is not MISSING:
        done.append(Change(here, plain(have), MISSING))
        drop(table, key)
    elif was is not MISSING and not same(have, was):
        done.append(Change(here, plain(have), plain(was)))
        put(table, key, was)


def _prune(table: Any, key: str, was: Any) -> None:
    """A table or list emptied here, that the original did not have, goes."""
    if key in table and not table[key] and was is MISSING:
        drop(table, key)


def _take_entry(
    items: Any, want: Upsert, before: list[Any], where: str, done: list[Change]
) -> None:
    here = _entry_where(where, want)
    mine = [i for i, item in enumerate(items) if _is_entry(item, want)]
    theirs = next((item for item in before if _is_entry(item, want)), MISSING)
    for i in reversed(mine):
        if i == mine[0] and theirs is not MISSING:
            if not same(items[i], theirs):
                done.append(Change(here, plain(items[i]), plain(theirs)))
                replace(items, i, theirs)
        else:
            done.append(Change(here, plain(items[i]), MISSING))
            pop(items, i)


def _is_entry(item: Any, want: Upsert) -> bool:
    return isinstance(item, Mapping) and same(item.get(want.field), want.entry[want.field])


def _entry_where(where: str, want: Upsert) -> str:
    return f"{where}[{want.field}={want.entry[want.field]}]"


def same(a: Any, b: Any) -> bool:
    """Equal as the file holds them: `true` is not `1`, `1` is not `1.0`."""
    if a is MISSING or b is MISSING:
        return a is b
    return _text(a) == _text(b)


def _text(value: Any) -> str:
    return json.dumps(plain(value), sort_keys=True, default=str)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _table(value: Any, where: str) -> Any:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where} holds {_kind(value)} where a table must be")
    return value


def _list(value: Any, where: str) -> Any:
    if not isinstance(value, list):
        raise InvalidInputError(f"{where} holds {_kind(value)} where a list must be")
    return value


KINDS: dict[type, str] = {dict: "a table", list: "a list", str: "a string"}


def _kind(value: Any) -> str:
    value = plain(value)
    return KINDS.get(type(value)) or type(value).__name__


__all__ = ["MISSING", "Change", "merge", "only_defaults", "same", "shape", "unmerge"]
