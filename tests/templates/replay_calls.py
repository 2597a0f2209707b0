"""A template's own calls read back through `harmony-desk replay --template FILE.jinja`: the
text a template writes for an assistant's calls (and prose before them), fed to the terminal
command as a model's generation, and what the command shows of it.

Guarantees: `rendered` is what the template writes after the generation prompt for each case,
never edited; `replayed` runs the real CLI entry point on those texts with the same tools and
returns one parsed JSON line per text, in order (the command must exit 0); `read_calls` is a
replay line's calls (recipient, arguments parsed) and its answer text.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.templates.calls.detect import call_messages, renderer, turn_part

Calls = list[tuple[str, Any]]  # (tool name, arguments)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": n,
            "description": "A test tool.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
    for n in ("get_weather", "get_time")
]


def rendered(source: str, cases: Sequence[tuple[Calls, str]]) -> list[str]:
    """For each (calls, prose): what the template writes for an assistant turn making the
    calls after the prose, as a model generates it (after the generation prompt)."""
    render = renderer(source, "", "", TOOLS)
    head = [{"role": "user", "content": "Weather?"}]
    return [turn_part(render, head, call_messages(calls, prose)).generated for calls, prose in cases]


def replayed(
    path: Path,
    texts: Sequence[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    tools: Sequence[Any] = TOOLS,
) -> list[dict[str, Any]]:
    """`harmony-desk replay --template path` on `texts` (one generation each) with `tools`: its
    lines."""
    lines = "".join(json.dumps({"text": t, "tools": tools}) + "\n" for t in texts)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    capsys.readouterr()
    assert main(["replay", "--template", str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def read_calls(out: dict[str, Any]) -> tuple[Calls, str]:
    """A replay line's calls (recipient, arguments) and its answer text."""
    shown = out["shown"]
    calls = [(s["recipient"], json.loads(s["text"])) for s in shown if s["lane"] == "tool_call"]
    return calls, "".join(s["text"] for s in shown if s["lane"] == "answer")
