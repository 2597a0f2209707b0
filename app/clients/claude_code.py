"""Claude Code: `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json`), its `env` object.

Guarantees: only keys of `env` are set, all as strings (Claude Code exports each into its own
environment): the Anthropic API's root, the key as a bearer token (`ANTHROPIC_AUTH_TOKEN`, sent
as `Authorization: Bearer`), our model for the main model and for every alias Claude Code picks
(opus, sonnet, haiku, sub-agents, and the older small/fast one), the output cap, how long it
waits for a local model, and the switches that stop its telemetry, error reports and other
non-essential traffic. The waits: a request's (`API_TIMEOUT_MS`, 10 minutes by default) and a
stream's silence (`CLAUDE_STREAM_IDLE_TIMEOUT_MS`, 5 minutes by default, counted in the events
its SDK passes on, so a server's `ping` events do not count) are both 30 minutes, the most its
byte-level watchdog takes: on a CPU a small model reads Claude Code's first prompt, some 20,000
tokens, in several minutes before its first token, and Claude Code would give up and resend it.
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
    " deprecated name of ANTHROPIC_DEFAULT_HAIKU_MODEL); CLAUDE_CONFIG_DIR moves ~/.claude;"
    " API_TIMEOUT_MS and CLAUDE_STREAM_IDLE_TIMEOUT_MS as Claude Code 2.1 reads them (its"
    " stream watchdogs: 300 s by default, 1,800 s at most)"
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
WAITS = ("API_TIMEOUT_MS", "CLAUDE_STREAM_IDLE_TIMEOUT_MS")
WAIT_MS = 30 * 60 * 1000


def settings_path(env: Mapping[str, str], home: Path) -> Path:
    return folder(env, "CLAUDE_CONFIG_DIR", home / ".claude") / "settings.json"


def edits(target: Target, env: Mapping[str, str], home: Path) -> tuple[FileEdit, ...]:
    variables = {
        "ANTHROPIC_BASE_URL": target.root,
        "ANTHROPIC_AUTH_TOKEN": target.key,
        **dict.fromkeys(MODEL_VARIABLES, target.model),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(target.max_tokens),
        **dict.fromkeys(WAITS, str(WAIT_MS)),
        **dict.fromkeys(QUIET, "1"),
    }
    return (FileEdit(settings_path(env, home), "json", {"env": variables}),)


__all__ = ["NAME", "NOTE", "SOURCE", "TITLE", "edits", "settings_path"]
