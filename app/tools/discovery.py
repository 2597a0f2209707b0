"""Finding tool plugins: pluggy hooks, the `harmony_desk.tools` entry points, plugin folders.

Sources, in order: the built-in tools; installed packages' `harmony_desk.tools` entry points;
then plugin folders, read without installing anything: each sub-folder with a
`pyproject.toml` that declares `harmony_desk.tools` entry points (its `src/` or the folder
itself is put on the import path), and each single-file `*.py` plugin. The folders are the
user's `plugins` folder in the config folder, the checkout's `plugins/` when running from
source (or the bundle's `plugins/` in a frozen build), and those listed in `$HARMONY_DESK_PLUGINS`.

Guarantees: a plugin that fails to import, or whose hook raises, is reported (with its name
and the reason) and skipped; the rest load. A folder plugin with the name of an installed one
is skipped (the installed one wins) and listed in `shadowed`. Duplicate tool names are left
to the registry, which refuses them with a message saying how to resolve them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from app.paths import config_dir
from app.tools.api import Tool

ENTRY_POINT_GROUP = "harmony_desk.tools"
hookspec = pluggy.HookspecMarker("harmony_desk")


class ToolSpec:
    """The hook a plugin implements."""

    @hookspec
    def harmony_desk_tools(self) -> list[Tool]:  # type: ignore[empty-body]
        """The tools this plugin offers."""


@dataclass
class Discovered:
    """What discovery found: tools by plugin name, and plugins that could not load."""

    tools: dict[str, list[Tool]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    shadowed: dict[str, str] = field(default_factory=dict)  # folder plugin name → its folder


def _builtin() -> ModuleType:
    from app.tools.builtin import everyday

    return everyday


def _plugin_tools(name: str, module: Any) -> list[Tool]:
    manager = pluggy.PluginManager("harmony_desk")
    manager.add_hookspecs(ToolSpec)
    manager.register(module, name=name)
    found: list[Tool] = []
    for batch in manager.hook.harmony_desk_tools():
        found.extend(
            t if t.plugin != "built-in" or name == "built-in" else _with_plugin(t, name)
            for t in batch
        )
    return found


def _with_plugin(t: Tool, plugin: str) -> Tool:
    from dataclasses import replace

    return replace(t, plugin=plugin)


def plugin_folders() -> list[Path]:
    """The folders scanned for plugins that are not installed (see the module docstring)."""
    folders = [config_dir() / "plugins"]
    checkout = Path(__file__).resolve().parents[2] / "plugins"
    bundled = getattr(sys, "_MEIPASS", None)  # a frozen bundle carries the example plugins
    if (checkout.parent / "pyproject.toml").is_file():
        folders.append(checkout)
    elif bundled is not None:
        folders.append(Path(bundled) / "plugins")
    extra = os.environ.get("HARMONY_DESK_PLUGINS", "")
    folders += [Path(p) for p in extra.split(os.pathsep) if p]
    return folders


def _folder_plugins(folder: Path) -> Iterator[tuple[str, Path, str]]:
    """(plugin name, import root, module[:attribute]) for every plugin in `folder`."""
    if not folder.is_dir():
        return
    for child in sorted(folder.iterdir()):
        project = child / "pyproject.toml"
        if child.is_dir() and project.is_file():
            try:
                data = tomllib.loads(project.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                yield child.name, child, f"!{project} is not readable TOML: {exc}"
                continue
            points = data.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
            root = child / "src" if (child / "src").is_dir() else child
            for name, target in points.items():
                yield str(name), root, str(target)
        elif child.suffix == ".py" and child.is_file() and not child.name.startswith("_"):
            yield child.stem, child, ""


def _load_folder_plugin(name: str, root: Path, target: str) -> Any:
    if target.startswith("!"):
        raise ValueError(target[1:])
    if not target:  # a single-file plugin
        spec = importlib.util.spec_from_file_location(f"harmony_desk_plugin_{name}", root)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {root}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    if str(root) not in sys.path:
        sys.path.append(str(root))
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name.strip())
    return getattr(module, attribute.strip()) if attribute else module


def discover(*, entry_points: bool = True, folders: Sequence[Path] | None = None) -> Discovered:
    """Every tool the built-ins, the installed plugins and the plugin folders offer."""
    out = Discovered()
    everyday = _builtin()
    out.tools["built-in"] = [v for v in vars(everyday).values() if isinstance(v, Tool)]
    if not entry_points:
        return out
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            module = ep.load()
            out.tools[ep.name] = _plugin_tools(ep.name, module)
        except Exception as exc:
            out.failures[ep.name] = f"{type(exc).__name__}: {exc}"
    for folder in plugin_folders() if folders is None else folders:
        for name, root, target in _folder_plugins(folder):
            if name in out.tools or name in out.failures:
                out.shadowed[name] = str(root)
                continue
            try:
                out.tools[name] = _plugin_tools(name, _load_folder_plugin(name, root, target))
            except Exception as exc:
                out.failures[name] = f"{type(exc).__name__}: {exc} (in {root})"
    return out
