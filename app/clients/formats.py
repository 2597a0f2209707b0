"""The clients' file formats, text to a document and back: JSON, TOML and YAML.

Guarantees: `load` first reads with the strict readers (the app's bounded JSON and YAML readers:
nested at most 200 deep, no YAML aliases; the standard `tomllib`), so a file is never rewritten
from what was not understood, and raises `InvalidInputError` naming the file for one it cannot
read; it gives None for a file with no data (empty, or only comments). A TOML document is then a
`tomlkit` one and a YAML document a `ruamel.yaml` round-trip one: both keep the comments, key
order, quoting and layout of the text. `dump(format, document, like)` writes what `load` reads
back equal, and lays it out as `like` (the file's text before) was: JSON with its indentation
(one line for a file that was one line), YAML with its indentation and its `---`, and every
format ending with the newlines `like` ended with, its lines ended as `like`'s were (CRLF or
LF); a new file is JSON indented by two, YAML with lists indented under their key. `render` is
`dump` checked: its text always reads back, with the strict readers, as the document's data.
`start` is the document of a file with no data yet, the comments of a comment-only file kept in
it.
"""

from __future__ import annotations

import io
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import tomlkit
import tomlkit.exceptions
import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError as RoundTripYAMLError

from app.clients import Format
from app.clients.nodes import plain
from app.errors import InvalidInputError
from app.inputs import load_json, load_yaml

Shape = Literal["table", "list"]
ENDING = re.compile(r"(?:\r?\n)+\Z")
NEW_YAML = {"table": (2, 4, 2), "list": (2, 2, 0)}  # (mapping, sequence, offset) for a new file
READ_ERRORS = (
    InvalidInputError,
    json.JSONDecodeError,
    yaml.YAMLError,
    RoundTripYAMLError,
    tomllib.TOMLDecodeError,
    tomlkit.exceptions.TOMLKitError,
)


def load(format: Format, text: str, path: Path) -> Any:
    """The document in `text` (the file `path`, named in errors); None when it holds no data."""
    try:
        if format == "toml":
            document = tomlkit.parse(text) if tomllib.loads(text) else None
            return document
        if not text.strip():
            return None
        if format == "json":
            return load_json(text)
        return None if load_yaml(text) is None else _round_trip().load(text)
    except READ_ERRORS as exc:
        why = exc.message if isinstance(exc, InvalidInputError) else str(exc).replace("\n", " ")
        raise InvalidInputError(
            f"cannot read {path} as {format.upper()} ({why}); nothing was changed"
        ) from exc


def start(format: Format, shape: Shape, text: str = "") -> Any:
    """An empty document of `shape`, keeping the comments of `text` (a file with no data)."""
    if format == "toml":
        return tomlkit.parse(text)
    if format == "json" or not text.strip():
        return [] if shape == "list" else ({} if format == "json" else CommentedMap())
    document = _round_trip().load(text.rstrip() + ("\n[]\n" if shape == "list" else "\n{}\n"))
    document.fa.set_block_style()
    return document


def dump(format: Format, document: Any, like: str = "") -> str:
    """`document` as the text of a `format` file laid out as `like` (see the guarantees)."""
    if format == "json":
        indent = _json_indent(like)
        text = json.dumps(document, indent=indent, ensure_ascii=False)
    elif format == "yaml":
        text = _dump_yaml(document, like)
    else:
        text = tomlkit.dumps(document)
    return _ending(text, like)


def render(format: Format, document: Any, like: str = "") -> tuple[str, bool]:
    """`dump`, checked: the text, and whether it kept `like`'s layout. Text that the strict
    reader does not read back as `document`'s data (a case the round-trip writer lays out
    wrong, such as a table added beside dotted keys) is never given: the data is written anew
    instead, without the comments."""
    text = dump(format, document, like)
    data = plain(document)
    try:
        kept = _same_data(_strict(format, text), data)
    except READ_ERRORS:
        kept = False
    return (text, True) if kept else (dump(format, data), False)


def _strict(format: Format, text: str) -> Any:
    if format == "toml":
        return tomllib.loads(text)
    if not text.strip():
        return None
    return load_json(text) if format == "json" else load_yaml(text)


def _same_data(a: Any, b: Any) -> bool:
    return bool(
        json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
    )


def _ending(text: str, like: str) -> str:
    """`text` ending with the newlines `like` ended with (one for a new file), its lines ended
    as `like`'s were."""
    body = ENDING.sub("", text)
    if not body:
        return ""
    found = ENDING.search(like)
    text = body + (found.group() if found else ("\n" if not like else ""))
    if "\r\n" in like:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text


def _json_indent(like: str) -> int | str | None:
    """The indentation of the JSON text `like`: None for one line, two for a new file."""
    if not like.strip():
        return 2
    if "\n" not in like.strip():
        return None
    found = re.search(r"^([ \t]+)\S", like, re.MULTILINE)
    if found is None:
        return 2
    step = found.group(1)
    return len(step) if step == " " * len(step) else step


def _round_trip() -> YAML:
    loader = YAML(typ="rt")
    loader.preserve_quotes = True
    loader.width = 1 << 16  # never fold a long value onto a second line
    return loader


def _dump_yaml(document: Any, like: str) -> str:
    writer = _round_trip()
    mapping, sequence, offset = _yaml_indents(
        like, "list" if isinstance(document, list) else "table"
    )
    writer.indent(mapping=mapping, sequence=sequence, offset=offset)
    writer.explicit_start = re.match(r"(?:[ \t]*(?:#[^\n]*)?\n)*---", like) is not None
    if not isinstance(document, CommentedMap | CommentedSeq):
        writer.default_flow_style = False
    out = io.StringIO()
    writer.dump(document, out)
    return out.getvalue()


def _yaml_indents(text: str, shape: Shape) -> tuple[int, int, int]:
    """`text`'s (mapping, sequence, offset), as `ruamel.yaml`'s `indent()` takes them: a nested
    table's step, a list item's step and its dash's offset from the key above it."""
    mapping = sequence = offset = None
    parent: int | None = None  # the indentation of the last line that is a key alone
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body.strip() or body.startswith("#"):
            continue
        column = len(line) - len(body)
        if body.startswith("- ") and sequence is None:
            above = parent if parent is not None and parent <= column else column
            offset, sequence = column - above, len(line) - len(body[1:].lstrip(" ")) - above
        elif (
            not body.startswith("-") and parent is not None and mapping is None and column > parent
        ):
            mapping = column - parent
        parent = column if re.fullmatch(r"[^#]*:\s*(#.*)?", body) else None
        if mapping is not None and sequence is not None:
            break
    default = NEW_YAML[shape]
    if sequence is None or offset is None or sequence < offset + 2:
        sequence, offset = default[1], default[2]
    return mapping or default[0], sequence, offset


__all__ = ["Shape", "dump", "load", "render", "start"]
