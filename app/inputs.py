"""Reading untrusted input with bounds: files, JSON and YAML.

Guarantees (each failure is an `InvalidInputError` that names what was wrong, for that input
only):
- `open_regular` opens only a regular file, read-only and non-blocking: what the path names is
  checked before it is opened (a FIFO or a device such as `/dev/zero` is never opened, so
  nothing blocks and no device is touched) and again on the open descriptor (a swap meanwhile is
  refused); without `follow`, a symbolic link is refused, never followed; a missing file is
  `FileNotFoundError`, for the caller to treat as "none";
- `read_text_file` reads only regular files (never a FIFO, a device or a folder), at most
  `limit` bytes, its size known before anything is read, as UTF-8;
- `load_json` never raises `RecursionError`: nesting deeper than `MAX_DEPTH` is refused, and a
  lone surrogate (`"\\ud800"`) becomes U+FFFD, so what was read can always be written back;
- `load_yaml` is `yaml.safe_load` without anchors and aliases (no "billion laughs") and with
  the same depth bound.
All three run in time linear in the input.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from app.errors import InvalidInputError

MAX_DEPTH = 200
MAX_FILE_BYTES = 256 * 1024 * 1024


def open_regular(
    path: str | os.PathLike[str], *, follow: bool = True
) -> tuple[int, os.stat_result]:
    """A read-only, non-blocking descriptor of the regular file at `path`, and its status (see
    the guarantees); the caller closes it."""
    target = Path(path)
    try:
        _check_regular(target, os.stat(target, follow_symlinks=follow))
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(target, flags | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise InvalidInputError(f"cannot read {target}: {exc.strerror}") from exc
    info = os.fstat(fd)
    try:
        _check_regular(target, info)
    except InvalidInputError:
        os.close(fd)
        raise
    return fd, info


def _check_regular(target: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise InvalidInputError(f"{target} is a symbolic link, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInputError(f"{target} is not a regular file")


def read_text_file(
    path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES, *, follow: bool = True
) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes (`follow`: `open_regular`)."""
    target = Path(path)
    try:
        fd, info = open_regular(target, follow=follow)
    except FileNotFoundError as exc:
        raise InvalidInputError(f"cannot read {target}: {exc.strerror}") from exc
    return read_opened_text(fd, info, target, limit)


def read_opened_text(fd: int, info: os.stat_result, target: Path, limit: int) -> str:
    """The UTF-8 text of the file `open_regular` opened as `fd` (closed here)."""
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise InvalidInputError(f"{target} is larger than {limit:,} bytes")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InvalidInputError(f"{target} is larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"{exc.reason} at byte {exc.start}"
        raise InvalidInputError(f"{target} is not UTF-8 text ({where})") from exc


def _clean(text: str) -> str:
    if text.isascii():  # no surrogate in it: most keys and values, at C speed
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _checked(value: Any) -> Any:
    """`value` with lone surrogates replaced; refused past `MAX_DEPTH` (no recursion)."""
    root = [value]
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidInputError(f"the input is nested deeper than {MAX_DEPTH} levels")
        items = container.items() if isinstance(container, dict) else enumerate(container)
        renamed: list[tuple[str, str]] = []
        for key, item in list(items):
            if isinstance(key, str) and key != (clean := _clean(key)):
                renamed.append((key, clean))
            if isinstance(item, str):
                container[key] = _clean(item)
            elif isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
        for old, new in renamed:
            container[new] = container.pop(old)
    return root[0]


def load_json(text: str | bytes) -> Any:
    """`json.loads` with the bounds above; `json.JSONDecodeError` for text that is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise InvalidInputError(f"the input is nested deeper than {MAX_DEPTH} levels") from exc
    return _checked(value)


class _BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses aliases and deep nesting while composing."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.YAMLError(
                f"YAML aliases (*{event.anchor}) are not accepted here: write the value out"
            )
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise yaml.YAMLError(f"the YAML is nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def load_yaml(text: str) -> Any:
    """`yaml.safe_load` without aliases and with the depth bound; `yaml.YAMLError` otherwise."""
    try:
        return _checked([yaml.load(text, Loader=_BoundedLoader)])[0]
    except RecursionError as exc:
        raise yaml.YAMLError(f"the YAML is nested deeper than {MAX_DEPTH} levels") from exc


__all__ = [
    "MAX_DEPTH",
    "load_json",
    "load_yaml",
    "open_regular",
    "read_opened_text",
    "read_text_file",
]
