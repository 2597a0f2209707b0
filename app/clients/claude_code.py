"""Claude Code: `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json`), its `env` object.

Guarantees: only keys of `env` are set, all as strings (Claude Code exports each into its own
environment): the Anthropic API's root, the key as a bearer token (`ANTHROPIC_AUTH_TOKEN`, sent
as `Authorization: Bearer`), our model for the main model and for every alias Claude Code picks
(opus, sonnet, haiku, sub-agents, and the older small/fast one), the output cap, and the
switches that stop its telemetry, error reports and other non-essential traffic.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from app.clients import FileEdit, Target, folder

NAME = "claude-code"
TITLE = "Claude Code"
SOURCE = (
    "code.claude.com/docs/en/env-vars and /settings (the `env` object of settings.json;"
    " ANTHROPIC_AUTH_TOKEN is sent as a bearer token; ANTHROPIC_SMALL_FAST_MODEL is the"
    " deprecated name of ANTHROPIC_DEFAULT_HAIKU_MODEL); CLAUDE_CONFIG_DIR moves ~/.claude"
)
NOTE = "Start `claude` in a project; `/status` shows the base URL and model it uses."

MODEL_VARIABLES = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)
QUIET = ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING")


def settings_path(env: Mapping[str, str], home: Path) -> Path:
    return folder(env, "CLAUDE_CONFIG_DIR", home / ".claude") / "settings.json"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    variables = {
        "ANTHROPIC_BASE_URL": target.root,
        "ANTHROPIC_AUTH_TOKEN": target.key,
        **dict.fromkeys(MODEL_VARIABLES, target.model),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(target.max_tokens),
        **dict.fromkeys(QUIET, "1"),
    }
    return (FileEdit(settings_path(env, home), "json", {"env": variables}),)


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "edits", "settings_path"]
