"""The clients' file formats, text to data and back: JSON, TOML and YAML.

Guarantees: `load` reads with the app's bounded readers (JSON and YAML nested at most 200 deep,
no YAML aliases; TOML with the standard `tomllib`), gives None for a file that is empty (or
only comments) and raises `InvalidInputError` naming the file for one it cannot read, so a file
is never overwritten with what was not understood; `dump` writes what `load` reads back equal
(JSON indented by two, keys in their order; YAML block style, keys in their order; TOML tables
after the keys of their parent, arrays of tables as `[[…]]`). Comments are not kept: the
caller keeps the original file as a backup.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from app.clients import Format
from app.errors import InvalidInputError
from app.inputs import load_json, load_yaml

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def load(format: Format, text: str, path: Path) -> Any:
    """The data in `text` (the file `path`, named in errors); None when it holds none."""
    try:
        if format == "toml":
            return tomllib.loads(text) or None
        if not text.strip():
            return None
        return load_json(text) if format == "json" else load_yaml(text)
    except (
        InvalidInputError,
        json.JSONDecodeError,
        yaml.YAMLError,
        tomllib.TOMLDecodeError,
    ) as exc:
        why = exc.message if isinstance(exc, InvalidInputError) else str(exc).replace("\n", " ")
        raise InvalidInputError(
            f"cannot read {path} as {format.upper()} ({why}); nothing was changed"
        ) from exc


def dump(format: Format, data: Any) -> str:
    """`data` as the text of a `format` file."""
    if format == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if format == "yaml":
        text: str = yaml.safe_dump(
            data, sort_keys=False, allow_unicode=True, default_flow_style=False
        )
        return text
    return dump_toml(data)


def dump_toml(table: Mapping[str, Any]) -> str:
    """A TOML document for `table` (keys of a table first, then its tables)."""
    lines: list[str] = []
    _table(lines, (), table, array=False)
    return "\n".join(lines).strip("\n") + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_table(v) for v in value)


def _table(lines: list[str], path: tuple[str, ...], table: Mapping[str, Any], array: bool) -> None:
    plain = {k: v for k, v in table.items() if not (_is_table(v) or _is_table_array(v))}
    if array:
        lines += ["", f"[[{_dotted(path)}]]"]
    elif path and (plain or len(plain) == len(table)):  # an empty table is written too
        lines += ["", f"[{_dotted(path)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in plain.items()]
    for key, value in table.items():
        if _is_table(value):
            _table(lines, (*path, key), value, array=False)
        elif _is_table_array(value):
            for item in value:
                _table(lines, (*path, key), item, array=True)


def _key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(_key(k) for k in path)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise InvalidInputError(f"{type(value).__name__} has no TOML form")


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


__all__ = ["dump", "dump_toml", "load"]
