"""Saved approvals and the tool audit log: real files, damaged files, the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.domain.events import CallOutcome, CallRecord
from app.tools.approval import ApprovalPolicy, ApprovalStore, Mode
from app.tools.audit import AuditLog
from app.tools.builtin.everyday import calculate
from app.tools.calls import Decision, PendingCall


def test_always_allow_and_deny_are_saved_and_apply_to_a_new_conversation(tmp_path: Path) -> None:
    store = ApprovalStore(tmp_path / "cfg" / "tool-approvals.json")
    first = ApprovalPolicy(lambda c: (Mode.ALWAYS, Decision(True)), store=store)
    assert first(PendingCall("call_1", calculate, {"expression": "1"})).allow
    later = ApprovalPolicy(lambda c: (None, Decision(False)), store=ApprovalStore(store.path))
    assert later(PendingCall("call_1", calculate, {"expression": "1"})).how == "always allow"
    store.remember("functions.word_count", Mode.DENY)
    conversation_only = ApprovalPolicy(lambda c: (Mode.ALLOW_CONVERSATION, Decision(True)), store=store)
    conversation_only.modes.pop("functions.calculate")
    conversation_only(PendingCall("call_2", calculate, {"expression": "2"}))
    assert store.load() == {"functions.calculate": Mode.ALWAYS, "functions.word_count": Mode.DENY}
    store.forget("functions.calculate")
    assert store.load() == {"functions.word_count": Mode.DENY}


def test_a_damaged_approvals_file_means_asking_again(tmp_path: Path) -> None:
    path = tmp_path / "tool-approvals.json"
    path.write_text('{"functions.calculate": "always allow"')  # cut off mid-write by hand
    asked: list[str] = []
    policy = ApprovalPolicy(lambda c: (asked.append(c.call_id), (None, Decision(False)))[1], store=ApprovalStore(path))
    assert not policy(PendingCall("call_1", calculate, {"expression": "1"})).allow and asked == ["call_1"]
    path.write_text('{"functions.calculate": "perhaps"}')
    assert ApprovalStore(path).load() == {}


def _record(call_id: str, ok: bool) -> CallRecord:
    outcome = (CallOutcome(call_id, True, {"result": 2}, arguments={"expression": "1+1"}, decision="asked: allowed",
                           duration_ms=1.234)
               if ok else CallOutcome(call_id, False, error_code="E-TOOL-DENIED", error="no", decision="asked: denied"))
    return CallRecord(call_id, "functions.calculate", '{"expression":"1+1"}', outcome)


def test_the_audit_log_appends_skips_damaged_lines_and_exports(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "data" / "tool-audit.jsonl")
    log.append([_record("call_1", True)], "conv-a")
    with open(log.path, "a", encoding="utf-8") as f:
        f.write('{"conversation": "conv-a", "tool": "cut off mid-wri\n')
    log.append([_record("call_1", False)], "conv-b")
    read = log.read()
    assert read.damaged_lines == 1 and [e["conversation"] for e in read.entries] == ["conv-a", "conv-b"]
    a = read.entries[0]
    assert (a["tool"], a["arguments_sent"], a["arguments_run"], a["decision"], a["duration_ms"], a["ok"], a["result"]) == (
        "functions.calculate", '{"expression":"1+1"}', {"expression": "1+1"}, "asked: allowed", 1.2, True, {"result": 2})
    assert read.entries[1]["error"] == {"code": "E-TOOL-DENIED", "message": "no"}
    out = tmp_path / "export.json"
    exported = log.export(out, conversation_id="conv-b")
    assert json.loads(out.read_text()) == exported.entries and len(exported.entries) == 1


def test_the_audit_and_approvals_commands(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CONFIG": str(tmp_path / "cfg")}
    AuditLog(tmp_path / "data" / "tool-audit.jsonl").append([_record("call_1", True), _record("call_2", False)], "c1")
    ApprovalStore(tmp_path / "cfg" / "tool-approvals.json").remember("functions.calculate", Mode.ALWAYS)
    run = lambda *a: subprocess.run([sys.executable, "-m", "app", "tools", *a], capture_output=True, text=True, env=env, timeout=120)  # noqa: E731
    shown = run("audit", "--format", "jsonl")
    assert shown.returncode == 0 and [json.loads(line)["call_id"] for line in shown.stdout.splitlines()] == ["call_1", "call_2"]
    written = run("audit", "--conversation", "c1", "--out", str(tmp_path / "a.json"))
    assert "2 calls written" in written.stderr and len(json.loads((tmp_path / "a.json").read_text())) == 2
    assert "functions.calculate              always allow" in run("approvals").stdout
    assert run("approvals", "--reset").stdout == ""
    listed = run("list")
    assert listed.returncode == 0
    assert "python                           built-in             runs code" in listed.stdout
    assert "browser.search                   built-in             network" in listed.stdout
