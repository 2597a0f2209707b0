"""Qwen Code: `~/.qwen/settings.json` (`$QWEN_HOME/settings.json`).

Guarantees: one entry of ours in `modelProviders.openai` (found by its name, "Harmony Desk"):
the model id, the `…/v1` base URL, `envKey` naming the variable that holds the key, and the
context window and output cap in its `generationConfig`; the key itself in the settings' `env`
(Qwen Code's fallback for variables the shell does not set); `security.auth.selectedType` and
`model.name` choose it at start; usage statistics, telemetry and auto-update are off. The
user's other providers' entries stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.clients import FileEdit, Target, Upsert, folder

NAME = "qwen-code"
TITLE = "Qwen Code"
SOURCE = (
    "@qwen-code/qwen-code 0.15.10 README.md (modelProviders.openai[]: id, name, baseUrl,"
    " description, envKey, generationConfig.contextWindowSize; env; security.auth.selectedType;"
    " model.name) and its cli.js settings schema (privacy.usageStatisticsEnabled, telemetry,"
    " general.enableAutoUpdate, generationConfig.samplingParams.max_tokens, QWEN_HOME)"
)
NOTE = "Start `qwen` in a project; `/model` lists Harmony Desk among your models."
KEY_VARIABLE = "HARMONY_DESK_API_KEY"


def settings_path(env: Mapping[str, str], home: Path) -> Path:
    return folder(env, "QWEN_HOME", home / ".qwen") / "settings.json"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    entry = {
        "id": target.model,
        "name": "Harmony Desk",
        "baseUrl": target.v1,
        "description": f"{target.model} on Harmony Desk's local server",
        "envKey": KEY_VARIABLE,
        "generationConfig": {
            "contextWindowSize": target.context,
            "samplingParams": {"max_tokens": target.max_tokens},
        },
    }
    changes = {
        "modelProviders": {"openai": Upsert("name", entry)},
        "env": {KEY_VARIABLE: target.key},
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": target.model},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False},
    }
    return (FileEdit(settings_path(env, home), "json", changes),)


__all__ = ["KEY_VARIABLE", "NAME", "NOTE", "SOURCE", "TITLE", "edits", "settings_path"]
