"""aider: `~/.aider.conf.yml` and `~/.aider.model.metadata.json` (aider reads both from the
home folder; it has no variable that moves them).

Guarantees: the config file gets the `…/v1` base URL and the key (`openai-api-base`,
`openai-api-key`), our model as `openai/NAME` for the main, weak and editor models, and
analytics, the update check and the release notes off; the metadata file gets one entry,
`openai/NAME`, with the context and output sizes (so aider neither warns about an unknown model
nor guesses its size) and a cost of zero. Other keys and models stay; undo in a metadata file
connect made also takes out the entries earlier runs wrote for other models.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.clients import FileEdit, Target, Whole

NAME = "aider"
TITLE = "aider"
SOURCE = (
    "aider-chat 0.86.2 aider/args.py and main.py (home ~/.aider.conf.yml; --openai-api-base,"
    " --openai-api-key, --model, --weak-model, --editor-model, --analytics, --analytics-disable,"
    " --check-update, --show-release-notes) and website/docs/config/adv-model-settings.md"
    " (~/.aider.model.metadata.json entries) and llms/openai-compat.md (the openai/ prefix)"
)
NOTE = (
    "A .aider.conf.yml in a git root or the current folder wins over the one in your home."
    " Start `aider` in a project."
)


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    model = f"openai/{target.model}"
    config = {
        "model": model,
        "weak-model": model,
        "editor-model": model,
        "openai-api-base": target.v1,
        "openai-api-key": target.key,
        "analytics": False,
        "analytics-disable": True,
        "check-update": False,
        "show-release-notes": False,
    }
    metadata = {
        "max_tokens": target.max_tokens,
        "max_input_tokens": target.context,
        "max_output_tokens": target.max_tokens,
        "input_cost_per_token": 0,
        "output_cost_per_token": 0,
        "litellm_provider": "openai",
        "mode": "chat",
    }
    return (
        FileEdit(home / ".aider.conf.yml", "yaml", config),
        FileEdit(home / ".aider.model.metadata.json", "json", {model: Whole(metadata, _ours)}),
    )


def _ours(entry: Any) -> bool:
    """A metadata entry as connect writes them (an `openai/` model served free), whatever model
    it names: undo in a file connect made takes out those of earlier runs too."""
    return (
        isinstance(entry, dict)
        and entry.get("litellm_provider") == "openai"
        and entry.get("input_cost_per_token") == 0
        and entry.get("output_cost_per_token") == 0
    )


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "edits"]
