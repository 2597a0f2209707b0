"""Edits inside a loaded document (`formats.load`) that leave what they do not touch as it was.

A document is plain JSON data, a `tomlkit` document or a `ruamel.yaml` round-trip one; `put`,
`drop`, `append`, `replace` and `pop` change one table or list of any of them, in place.

Guarantees: a plain value put in becomes the document's own kind of node (a TOML table, a YAML
table or list in block style; a YAML string that a YAML 1.1 reader such as PyYAML would take for
a boolean, a number or null is quoted, a key too), and a node copied from another document goes
in as it is; a key that is replaced keeps its place and its own comment, as far from the value
as it was. The comments and blank lines after an item are not lost with it: an item added at the
end of a YAML table or list takes over the comments that followed the old last item, and those
after an item taken out go to the item before it (above the first, to the table's own opening
comments), so adding and then taking out an item gives the same text back; a TOML table put into
a table ends with a blank line, as the tables of a file do. `plain` is any node as plain Python
data (what is compared and reported).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import tomlkit
import tomlkit.container
import tomlkit.items
import yaml
from ruamel.yaml.comments import CommentedBase, CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

STRING_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()  # PyYAML's (YAML 1.1): what aider and llm read with


def plain(value: Any) -> Any:
    """`value` as plain Python data: dict, list, str, int, float, bool, None, dates."""
    if isinstance(value, tomlkit.items.Item | tomlkit.container.Container):
        value = value.unwrap()
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool | ScalarBoolean):
        return bool(value)
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def copied(document: Any) -> Any:
    """A deep copy of `document`, comments and all (ruamel.yaml's own copy of an empty list
    drops its comments)."""
    result = copy.deepcopy(document)
    if isinstance(document, CommentedSeq) and not document:
        document.copy_attributes(result, memo={})
    return result


def put(table: Any, key: Any, value: Any) -> None:
    """`table[key] = value` (see the guarantees)."""
    if isinstance(table, CommentedMap):
        old = table.get(key)
        tail = _take_tail(table, key if key in table else _last(table))
        table[key] = _yaml_node(value)
        _give_tail(table, key, tail)
        _keep_gap(table, key, old)
    elif isinstance(table, tomlkit.container.Container | tomlkit.items.AbstractTable):
        table[key] = value
        _spaced(table, key, fresh=not isinstance(value, tomlkit.items.Item))
    else:
        table[key] = value


def drop(table: Any, key: Any) -> None:
    """`del table[key]`, the comments after it kept (see the guarantees)."""
    if not isinstance(table, CommentedMap):
        del table[key]
        return
    keys = list(table)
    tail = _take_tail(table, key)
    del table[key]
    table.ca.items.pop(key, None)
    _give_back(table, keys[: keys.index(key)], tail)


def append(items: Any, value: Any) -> None:
    """`items.append(value)` (see the guarantees)."""
    if not isinstance(items, CommentedSeq):
        items.append(value)
        return
    tail = _take_tail(items, _last(items))
    items.append(_yaml_node(value))
    _give_tail(items, len(items) - 1, tail)


def replace(items: Any, index: int, value: Any) -> None:
    """`items[index] = value` (see the guarantees)."""
    if not isinstance(items, CommentedSeq):
        items[index] = value
        return
    tail = _take_tail(items, index)
    items[index] = _yaml_node(value)
    _give_tail(items, index, tail)


def pop(items: Any, index: int) -> None:
    """`del items[index]`, the comments after it kept (see the guarantees)."""
    if not isinstance(items, CommentedSeq):
        del items[index]
        return
    tail = _take_tail(items, index)
    del items[index]
    _give_back(items, list(range(index)), tail)


# --- YAML: nodes, and the comments that follow an item -------------------------------------
# ruamel.yaml reads the lines after an item into two places: after the first line of the
# comment of the item's last scalar or flow-style value (`ca.items`), and at the end of a table
# or list (`ca.end`) whose last item is in flow style. An item's "tail" is both, taken out as
# text; it is given back in the first place, the one ruamel.yaml writes for any table or list.


def _block(value: Any) -> bool:
    """A table or list with items, written in block style (one item a line)."""
    return (
        isinstance(value, CommentedMap | CommentedSeq)
        and len(value) > 0
        and not value.fa.flow_style()
    )


def _yaml_node(value: Any) -> Any:
    """A plain value as a round-trip node; a node (copied from a document) without the lines
    that followed it there, which belong to where it was."""
    if isinstance(value, CommentedBase):
        node = copied(value)
        if _block(node):
            _take_tail(node, _last(node))
            _take_end(node)
        return node
    if isinstance(value, Mapping):
        table = CommentedMap((_yaml_node(k), _yaml_node(v)) for k, v in value.items())
        table.fa.set_block_style()
        return table
    if isinstance(value, list):
        items = CommentedSeq(_yaml_node(v) for v in value)
        items.fa.set_block_style()
        return items
    if isinstance(value, str) and _resolved(value) != STRING_TAG:
        return DoubleQuotedScalarString(value)  # "yes", "1.0", "null": a string all the same
    return value


def _resolved(text: str) -> str:
    """The tag PyYAML gives `text` written as a plain scalar."""
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return tag


def _last(container: Any) -> Any:
    """The key of a table's last item, the index of a list's; None when it has none."""
    if not len(container):
        return None
    return list(container)[-1] if isinstance(container, CommentedMap) else len(container) - 1


def _token_at(container: Any) -> int:
    """Where in an item's comments the one after its value is: 2 in a table, 0 in a list."""
    return 2 if isinstance(container, CommentedMap) else 0


def _take_tail(container: Any, key: Any) -> str:
    """The lines after the item `container[key]` (its own line's comment stays), taken out."""
    if key is None:
        return ""
    value = container[key]
    if _block(value):
        return _take_tail(value, _last(value)) + _take_end(value)
    slot = container.ca.items.get(key)
    token = slot[_token_at(container)] if slot else None
    if token is None or "\n" not in token.value:
        return ""
    own, _, tail = str(token.value).partition("\n")
    token.value = own + "\n"
    return tail


def _take_end(container: Any) -> str:
    end = container.ca.end or []
    container.ca.end = None
    return "".join(token.value for token in end)


def _give_tail(container: Any, key: Any, tail: str) -> None:
    """`tail` after the item `container[key]` and the lines already after it."""
    if not tail:
        return
    value = container[key]
    if _block(value):
        _give_tail(value, _last(value), tail)
        return
    slot = container.ca.items.setdefault(key, [None, None, None, None])
    at = _token_at(container)
    if slot[at] is None:
        slot[at] = CommentToken("\n", CommentMark(0), None)
    slot[at].value = slot[at].value + tail


def _keep_gap(table: CommentedMap, key: Any, old: Any) -> None:
    """The comment on a replaced value's line stays as far from the value as it was (ruamel.yaml
    keeps its column, which a longer value pushes out and a shorter one leaves far away)."""
    slot = table.ca.items.get(key)
    token = slot[2] if slot else None
    where = (table.lc.data or {}).get(key)
    widths = _width(old), _width(table[key])
    if token is None or where is None or None in widths or not token.value.startswith("#"):
        return
    gap = token.column - where[3] - widths[0]
    if gap >= 1:
        token.column = where[3] + widths[1] + gap


def _width(value: Any) -> int | None:
    """How wide a scalar is written on its line; None for anything else."""
    if isinstance(value, bool):
        return 4 if value else 5
    if isinstance(value, str) and "\n" not in value:
        quoted = isinstance(value, SingleQuotedScalarString | DoubleQuotedScalarString)
        return len(value) + 2 * quoted
    if isinstance(value, int | float):
        return len(str(value))
    return None


def _give_back(container: Any, before: list[Any], tail: str) -> None:
    """The lines after an item taken out: to the item before it, else above the first."""
    if not tail:
        return
    if before:
        _give_tail(container, before[-1], tail)
        return
    comment = container.ca.comment
    if comment is None:
        container.ca.comment = comment = [None, []]
    if comment[1] is None:
        comment[1] = []
    comment[1].append(CommentToken(tail, CommentMark(0), None))


# --- TOML: blank lines between tables --------------------------------------------------------


def _spaced(table: Any, key: Any, fresh: bool) -> None:
    """A new TOML table put into a table (not the document, which spaces its own) ends with a
    blank line, as the tables of a file do."""
    node = table[key]
    if fresh and isinstance(node, tomlkit.items.Table) and isinstance(table, tomlkit.items.Table):
        node.add(tomlkit.nl())


__all__ = ["append", "copied", "drop", "plain", "pop", "put", "replace"]
