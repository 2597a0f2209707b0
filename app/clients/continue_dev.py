"""Continue: `~/.continue/config.yaml` (`$CONTINUE_GLOBAL_DIR/config.yaml`).

Guarantees: one entry of ours in `models` (found by its name, "Harmony Desk"): provider
`openai`, the model, `apiBase` the `…/v1` URL, `apiKey` the key, the chat, edit, apply and
summarize roles, tool use, and the context length and output cap in
`defaultCompletionOptions`; the required `name`, `version` and `schema` only where the file has
none. The user's other models and blocks stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.clients import Default, FileEdit, Target, Upsert, folder

NAME = "continue"
TITLE = "Continue"
SOURCE = (
    "continuedev/continue docs/reference.mdx (config.yaml: name, version, schema required;"
    " models[]: name, provider, model, apiBase, apiKey, roles, capabilities,"
    " defaultCompletionOptions.contextLength/maxTokens) and core/util/paths.ts"
    " (CONTINUE_GLOBAL_DIR moves ~/.continue)"
)
NOTE = (
    'Continue has no telemetry setting in config.yaml: untick "Continue: Telemetry Enabled" in'
    " your editor's settings. Pick \"Harmony Desk\" in Continue's model list."
)


def config_path(env: Mapping[str, str], home: Path) -> Path:
    return folder(env, "CONTINUE_GLOBAL_DIR", home / ".continue") / "config.yaml"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    model = {
        "name": "Harmony Desk",
        "provider": "openai",
        "model": target.model,
        "apiBase": target.v1,
        "apiKey": target.key,
        "roles": ["chat", "edit", "apply", "summarize"],
        "capabilities": ["tool_use"],
        "defaultCompletionOptions": {
            "contextLength": target.context,
            "maxTokens": target.max_tokens,
        },
    }
    changes = {
        "name": Default("Local Config"),
        "version": Default("1.0.0"),
        "schema": Default("v1"),
        "models": Upsert("name", model),
    }
    return (FileEdit(config_path(env, home), "yaml", changes),)


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "config_path", "edits"]
