"""The model host a screenshot draws with: the bundled default model's file, or a scripted
host standing in for it (named so in the picture).

Guarantees: `bundled_model` gives the default chat model's file, or None (saying why on
stderr) where its package is not installed; `scripted_host` is a host whose answers are the
given token texts, in order, under `template`, shown by `name`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app.controllers.bridge import EngineBridge
from app.controllers.model_host import ModelHost
from app.errors import ModelLoadError


def bundled_model() -> Path | None:
    """The default chat model's file, None where its package is not installed."""
    from app.library.bundled import default_model_path

    try:
        return default_model_path()
    except ModelLoadError as problem:
        print(f"no bundled model: {problem}", file=sys.stderr)
        return None


def scripted_host(scripts: list[str], template: str, name: str) -> ModelHost:
    """A host answering `scripts` one after the other (a picture's stand-in for a model)."""
    from app.engine.local.scripted import ScriptedClient

    host = ModelHost(EngineBridge())
    host.use(ScriptedClient(scripts), template, name)
    return host


def real_host() -> ModelHost:
    """A host with no model yet (the picture loads the bundled one into it)."""
    return ModelHost(EngineBridge())


__all__ = ["bundled_model", "real_host", "scripted_host"]
