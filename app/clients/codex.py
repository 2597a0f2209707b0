"""Codex CLI: `~/.codex/config.toml` (`$CODEX_HOME/config.toml`).

Guarantees: the top-level `model`, `model_provider` and `model_context_window`, and our own
provider table `[model_providers.harmony-desk]` (the `…/v1` base URL, `wire_api = "responses"`,
the only wire API current Codex has, and the key as `experimental_bearer_token`, so no shell
variable is needed); analytics, the feedback flow, the update check and web search are turned
off. Other providers and profiles are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.clients import PROVIDER_ID, FileEdit, Target, Whole, folder

NAME = "codex"
TITLE = "Codex"
SOURCE = (
    "openai/codex codex-rs/core/config.schema.json (ConfigToml: model, model_provider,"
    " model_context_window, analytics.enabled, feedback.enabled, check_for_update_on_startup,"
    " web_search; ModelProviderInfo: name, base_url, wire_api = responses only,"
    " experimental_bearer_token) and model_provider_info.rs; CODEX_HOME moves ~/.codex"
)
NOTE = "Start `codex` in a project; it uses the provider `harmony-desk` with the model above."


def config_path(env: Mapping[str, str], home: Path) -> Path:
    return folder(env, "CODEX_HOME", home / ".codex") / "config.toml"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    provider = {
        "name": "Harmony Desk",
        "base_url": target.v1,
        "wire_api": "responses",
        "experimental_bearer_token": target.key,
    }
    changes = {
        "model": target.model,
        "model_provider": PROVIDER_ID,
        "model_context_window": target.context,
        "model_providers": {PROVIDER_ID: Whole(provider)},
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        "check_for_update_on_startup": False,
        "web_search": "disabled",
    }
    return (FileEdit(config_path(env, home), "toml", changes),)


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "config_path", "edits"]
