"""The Tool calls view's rows, from a real audit file written by the audit itself: each call
says what ran (by its readable name), with what, its outcome, and who decided; a denied call,
a failed one and a damaged line are said as such; one chat's calls only; an audit that cannot
be read is said in a sentence, on the GUI thread, never raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.controllers.tool_calls_view import CallsRead, ToolCallsView, approver, read_calls
from app.domain.events import CallOutcome, CallRecord
from app.tools.audit import AuditLog


def record(call_id: str, tool: str, sent: str, outcome: CallOutcome) -> CallRecord:
    return CallRecord(call_id, tool, sent, outcome)


def written(path: Path) -> AuditLog:
    audit = AuditLog(path)
    ran = CallOutcome("c1", True, {"timezone": "Europe/Oslo"}, arguments={"timezone": "Europe/Oslo"},
                      decision="asked: allowed, arguments edited", duration_ms=21.5)  # fmt: skip
    audit.append(
        [record("c1", "functions.time__get_current_time", '{"timezone":"America/Oslo"}', ran)],
        "chat-a",
    )
    denied = CallOutcome("c2", False, error_code="E-TOOL-DENIED", error="the user denied it",
                         arguments={"expression": "1+1"}, decision="denied by policy")  # fmt: skip
    failed = CallOutcome("c3", False, error_code="E-TOOL-TIMEOUT", error="took too long",
                         arguments={}, decision="allowed without asking", duration_ms=30_000.0)  # fmt: skip
    audit.append([record("c2", "functions.calculate", '{"expression":"1+1"}', denied)], "chat-a")
    audit.append([record("c3", "python", "", failed)], "chat-a")
    audit.append([record("c4", "functions.calculate", "{}", ran)], "chat-b")
    with path.open("a", encoding="utf-8") as f:
        f.write('{"conversation": "chat-a", "tool": \n')  # a line cut by a crash
    return audit


def test_a_chats_calls_are_rows_a_person_reads(tmp_path: Path) -> None:
    read = read_calls("chat-a", written(tmp_path / "audit.jsonl"), servers=lambda: ["time"])
    assert read.damaged == 1 and read.problem == "" and len(read.rows) == 3
    ran, denied, failed = read.rows
    assert (ran.tool, ran.called) == ("get_current_time · time", "functions.time__get_current_time")
    assert ran.outcome == "Done in 0.02 s" and ran.ok and ran.edited
    assert ran.approver == "You, when asked (Run)" and ran.when[:2] == "20"
    assert (
        '"America/Oslo"' in ran.sent
        and '"Europe/Oslo"' in ran.ran
        and '"Europe/Oslo"' in ran.result
    )
    details = ran.details()
    assert "Arguments that ran (edited):" in details and details.index("America") < details.index(
        "edited)"
    )
    assert (denied.tool, denied.outcome) == ("calculate", "Denied")
    assert (
        denied.approver == "Your saved choice: never allowed"
        and denied.result == "the user denied it"
    )
    assert "Error:" in denied.details() and not denied.edited
    assert failed.outcome == "Failed in 30.00 s: E-TOOL-TIMEOUT" and failed.tool == "python"
    assert failed.approver == "Nobody: this tool runs without asking"


def test_every_decision_the_host_writes_has_words() -> None:
    for decision in ("asked: allowed", "asked: denied", "asked: always allow", "asked: deny from now on",
                     "asked: allow for this conversation", "allow for this conversation", "always allow",
                     "denied by policy", "allowed without asking", "stopped by the user"):  # fmt: skip
        assert approver(decision) != decision, decision
    assert approver("") == "(not recorded)" and approver("something new") == "something new"


def test_an_audit_that_cannot_be_read_is_said(qtbot: Any, tmp_path: Path) -> None:
    folder = tmp_path / "audit.jsonl"
    folder.mkdir()  # reading it fails: a folder where the file should be
    view = ToolCallsView(AuditLog(folder), servers=list)
    with qtbot.waitSignal(view.loaded, timeout=10_000) as heard:
        view.load("chat-a")
    read = heard.args[0]
    assert isinstance(read, CallsRead) and read.rows == () and read.conversation == "chat-a"
    assert str(folder) in read.problem and "could not be read" in read.problem


def test_a_read_for_a_chat_no_longer_open_is_dropped(qtbot: Any, tmp_path: Path) -> None:
    view = ToolCallsView(written(tmp_path / "audit.jsonl"), servers=list)
    heard: list[CallsRead] = []
    view.loaded.connect(heard.append)
    view.load("chat-a")
    with qtbot.waitSignal(view.loaded, timeout=10_000):
        view.load("chat-b")
    qtbot.waitUntil(lambda: bool(heard))
    assert [r.conversation for r in heard] == ["chat-b"] and len(heard[0].rows) == 1
