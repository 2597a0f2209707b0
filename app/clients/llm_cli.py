"""llm (Simon Willison's): `extra-openai-models.yaml` in its user folder (`$LLM_USER_PATH`, else
click's app folder for `io.datasette.llm`: `~/.config/io.datasette.llm` on Linux).

Guarantees: one entry of ours in the file's list (found by `model_id: harmony-desk`, the name
`llm -m` takes): the model sent to the server, the `…/v1` base URL, tools and schemas on. With
the server's token, the entry names a key (`api_key_name`) and `keys.json` beside it holds that
key under the same name, where `llm keys set` puts keys; without one no key is named and llm
sends a dummy key, which a keyless loopback server takes. The user's other models stay.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from app.clients import PLACEHOLDER_KEY, PROVIDER_ID, Default, FileEdit, Target, Upsert, xdg_config

NAME = "llm"
TITLE = "llm"
SOURCE = (
    "llm 0.36 llm/default_plugins/openai_models.py (extra-openai-models.yaml: model_id,"
    " model_name, api_base, api_key_name, supports_tools, supports_schema; an api_base with no"
    " api_key_name needs no key), llm/__init__.py user_dir (LLM_USER_PATH, click.get_app_dir)"
    " and llm/cli.py keys_set (keys.json)"
)
NOTE = (
    f'Use it with `llm -m {PROVIDER_ID} "..."`, or make it the default:'
    f" `llm models default {PROVIDER_ID}`."
)
KEYS_NOTE = "This file stores secret API credentials. Do not share!"  # what `llm keys set` writes


def user_dir(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """llm's `user_dir()`: `$LLM_USER_PATH`, else `click.get_app_dir("io.datasette.llm")`."""
    if env.get("LLM_USER_PATH"):
        return Path(env["LLM_USER_PATH"])
    if platform == "win32":
        return Path(env.get("APPDATA") or home) / "io.datasette.llm"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "io.datasette.llm"
    return xdg_config(env, home) / "io.datasette.llm"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    folder = user_dir(env, home)
    entry: dict[str, object] = {
        "model_id": PROVIDER_ID,
        "model_name": target.model,
        "api_base": target.v1,
        "supports_tools": True,
        "supports_schema": True,
    }
    if target.key == PLACEHOLDER_KEY:
        return (FileEdit(folder / "extra-openai-models.yaml", "yaml", Upsert("model_id", entry)),)
    entry["api_key_name"] = PROVIDER_ID
    keys = {"// Note": Default(KEYS_NOTE), PROVIDER_ID: target.key}
    return (
        FileEdit(folder / "extra-openai-models.yaml", "yaml", Upsert("model_id", entry)),
        FileEdit(folder / "keys.json", "json", keys, all_secret=True),
    )


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "edits", "user_dir"]
