"""Finding tool plugins: pluggy hooks, the `harmony_desk.tools` entry points, plugin folders.

Sources, in order: the built-in tools; installed packages' `harmony_desk.tools` entry points;
then plugin folders, read without installing anything: each sub-folder with a
`pyproject.toml` that declares `harmony_desk.tools` entry points (its `src/` or the folder
itself is put on the import path), and each single-file `*.py` plugin. The folders are the
user's `plugins` folder in the config folder, the checkout's `plugins/` when running from
source (or the bundle's `plugins/` in a frozen build), and those listed in `$HARMONY_DESK_PLUGINS`.

Guarantees: nothing outside Harmony Desk itself is imported into the app. A plugin is
imported only once the user trusts it (`app/tools/trust.py`: name, path and content hash);
until then, or after its files change, it is listed in `pending` and not imported at all.
The example plugins that ship with the app (a checkout's or the bundle's `plugins/`) are the
app's own code and need no answer.
The folders themselves are `app/tools/places.py`'s; the hook a plugin implements is
`app/tools/plugin_load.py`'s.
Trusted plugins are imported and run in a plugin-host process (`app/tools/plugin_host.py`):
one that fails, blocks or crashes there is reported (with its name and the reason) and
skipped; the rest load. A folder plugin with the name of an installed one is skipped (the
installed one wins) and listed in `shadowed`. Duplicate tool names are left to the registry,
which refuses them with a message saying how to resolve them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.tools.api import Tool
from app.tools.builtin import everyday
from app.tools.places import plugin_folders, shipped_plugins
from app.tools.plugin_host import PluginHost
from app.tools.plugin_load import ENTRY_POINT_GROUP, PluginSpec
from app.tools.trust import Kind, PluginIdentity, TrustStore, hash_tree


@dataclass
class Discovered:
    """What discovery found: tools by plugin name, and plugins that could not load."""

    tools: dict[str, list[Tool]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    shadowed: dict[str, str] = field(default_factory=dict)  # folder plugin name → its folder
    pending: dict[str, PluginIdentity] = field(default_factory=dict)  # not trusted (yet)
    trusted: dict[str, PluginIdentity] = field(default_factory=dict)
    host: PluginHost | None = None

    def close(self) -> None:
        if self.host is not None:
            self.host.close()


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


def _entry_point_identity(ep: importlib.metadata.EntryPoint) -> tuple[PluginIdentity, str]:
    dist = ep.dist
    listed = (dist.files or []) if dist is not None else []
    files = sorted(str(f) for f in listed if str(f).endswith((".py", ".pth")))
    digest = hashlib.sha256(ep.value.encode())
    where = ""
    for name in files:
        path = Path(str(dist.locate_file(name))) if dist is not None else Path(name)
        where = where or str(path.parent)
        with contextlib.suppress(OSError):
            digest.update(name.encode() + b"\0" + path.read_bytes())
    root = str(dist.locate_file("")) if dist is not None else where
    return PluginIdentity(ep.name, "entry point", root, digest.hexdigest()), root


def candidates(folders: Sequence[Path] | None = None) -> Iterator[tuple[PluginIdentity, str]]:
    """Every plugin found, with what the host needs to import it (`module:attr`, "" a file)."""
    seen: set[str] = set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.dist is not None and ep.dist.name == "harmony-desk":
            continue
        identity, _root = _entry_point_identity(ep)
        seen.add(ep.name)
        yield identity, ep.value
    for folder in plugin_folders() if folders is None else folders:
        for name, root, target in _folder_plugins(folder):
            kind: Kind = "file" if not target else "folder"
            if target.startswith("!") or name in seen:
                yield PluginIdentity(name, kind, str(root), ""), target
                continue
            seen.add(name)
            tree = root if kind == "file" or root.name != "src" else root.parent
            yield PluginIdentity(name, kind, str(root), hash_tree(tree)), target


def is_shipped(identity: PluginIdentity) -> bool:
    """Whether the plugin is one of the examples that ship with the app."""
    shipped = shipped_plugins()
    return shipped is not None and Path(identity.path).resolve().is_relative_to(shipped.resolve())


def discover(
    *,
    entry_points: bool = True,
    folders: Sequence[Path] | None = None,
    trust: TrustStore | None = None,
) -> Discovered:
    """Every tool the built-ins and the trusted plugins offer; untrusted plugins are pending."""
    out = Discovered()
    out.tools["built-in"] = [v for v in vars(everyday).values() if isinstance(v, Tool)]
    if not entry_points:
        return out
    trust = trust or TrustStore()
    specs: list[PluginSpec] = []
    for identity, target in candidates(folders):
        name = identity.name
        if name in out.trusted or name in out.pending or name in out.failures:
            out.shadowed[name] = identity.path
        elif target.startswith("!"):
            out.failures[name] = target[1:]
        elif not (is_shipped(identity) or trust.is_trusted(identity)):
            out.pending[name] = identity
        else:
            out.trusted[name] = identity
            specs.append(PluginSpec(name, identity.kind, identity.path, target))
    if specs:
        out.host = PluginHost()
        tools, failures = out.host.load(specs)
        out.tools.update(tools)
        out.failures.update(failures)
    return out
