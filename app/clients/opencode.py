"""OpenCode: `~/.config/opencode/opencode.json` (`$XDG_CONFIG_HOME/opencode/opencode.json`).

Guarantees: our provider `provider.harmony-desk` (the AI SDK's `@ai-sdk/openai-compatible`,
`options.baseURL` the `…/v1` URL, `options.apiKey` the key, one model with its context and
output `limit`), `model` and `small_model` set to it as `harmony-desk/NAME`, sharing disabled
and automatic updates off; `$schema` only where the file has none. Other providers stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.clients import PROVIDER_ID, Default, FileEdit, Target, Whole, xdg_config

NAME = "opencode"
TITLE = "OpenCode"
SOURCE = (
    "anomalyco/opencode packages/web/src/content/docs/providers.mdx (Custom provider: npm,"
    " name, options.baseURL, options.apiKey, models.<id>.limit.context/output) and config.mdx"
    " (global ~/.config/opencode/opencode.json, model, small_model, share, autoupdate); the"
    " global folder follows XDG_CONFIG_HOME"
)
NOTE = (
    "OpenCode also fetches its model catalogue at start: OPENCODE_DISABLE_MODELS_FETCH=1 in your"
    " shell stops that (no file setting does). An opencode.jsonc beside it, or a project's"
    " opencode.json, wins over these settings."
)
SCHEMA = "https://opencode.ai/config.json"


def config_path(env: Mapping[str, str], home: Path) -> Path:
    return xdg_config(env, home) / "opencode" / "opencode.json"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    model = {
        "name": target.model,
        "limit": {"context": target.context, "output": target.max_tokens},
    }
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Harmony Desk",
        "options": {"baseURL": target.v1, "apiKey": target.key},
        "models": {target.model: model},
    }
    chosen = f"{PROVIDER_ID}/{target.model}"
    changes = {
        "$schema": Default(SCHEMA),
        "provider": {PROVIDER_ID: Whole(provider)},
        "model": chosen,
        "small_model": chosen,
        "share": "disabled",
        "autoupdate": False,
    }
    return (FileEdit(config_path(env, home), "json", changes),)


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "config_path", "edits"]
