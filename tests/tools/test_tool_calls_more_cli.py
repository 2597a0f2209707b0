"""`harmony-desk tools audit --format md`, through the real entry point, on a real audit file
written by the audit itself (`test_tool_calls_rows.written`): one chat's calls as the Markdown a
person reads — the same document the window's Tool calls view exports — on stdout and into a
file; JSON Lines into a file are the audit's own entries; the format is refused when unknown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.tools.audit import AuditLog
from app.tools.audit_export import export_calls
from tests.tools.test_tool_calls_rows import written

ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path: Path, *words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
           "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CACHE": str(tmp_path / "cache")}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "app", "tools", "audit", *words], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip


def test_the_audit_exports_a_chats_calls_as_markdown_and_json_lines(tmp_path: Path) -> None:
    audit = written(tmp_path / "data" / "tool-audit.jsonl")
    shown = run(tmp_path, "--conversation", "chat-a", "--format", "md")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert text.startswith("# Tool calls\n") and "3 calls, oldest first" in text
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads == ["## 1. get_current_time · time — Done in 0.02 s", "## 2. calculate — Denied",
                     "## 3. python — Failed in 30.00 s: E-TOOL-TIMEOUT"]  # fmt: skip
    assert (
        "Decided by: You, when asked (Run)" in text and "Your saved choice: never allowed" in text
    )
    assert text.index('"America/Oslo"') < text.index("Arguments that ran (edited)")
    assert "the user denied it" in text  # the heads above: chat-a's three calls, none of chat-b's
    assert "1 damaged lines" in shown.stderr

    out = tmp_path / "out" / "calls.md"
    out.parent.mkdir()
    filed = run(tmp_path, "--conversation", "chat-a", "--format", "md", "--out", str(out))
    assert filed.returncode == 0 and "3 calls written to" in filed.stderr, filed.stderr
    assert out.read_text(encoding="utf-8") == text
    window = tmp_path / "out" / "window.md"  # the writer the window's Export calls
    export_calls(window, log=audit, conversation_id="chat-a", fmt="md")
    assert window.read_text(encoding="utf-8") == text

    lines = tmp_path / "out" / "calls.jsonl"
    assert (
        run(
            tmp_path, "--conversation", "chat-a", "--format", "jsonl", "--out", str(lines)
        ).returncode
        == 0
    )
    entries = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert entries == AuditLog(audit.path).read("chat-a").entries and len(entries) == 3


def test_a_result_holding_backticks_cannot_end_its_fence(tmp_path: Path) -> None:
    audit = written(tmp_path / "audit.jsonl")
    entry = {**audit.read("chat-b").entries[0], "result": "```\n# not a heading\n````"}
    audit.path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    out = tmp_path / "calls.md"
    export_calls(out, log=audit, fmt="md")
    text = out.read_text(encoding="utf-8")
    assert "`````\n```\n# not a heading\n````\n`````" in text
    refused = run(tmp_path, "--format", "html")
    assert refused.returncode == 2 and "invalid choice" in refused.stderr
