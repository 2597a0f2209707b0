"""What an MCP server asks of the host beside tool calls, run for real against a server built
with the SDK over stdio (`fixtures/mcp_asking_server.py`): sampling answered by the bundled
model after the person approves it at the terminal, denied (the server's tool reads the
error), refused with no model; in the window the approval dialog shows the request, "allow in
this chat" lasts, and an unanswered one is withdrawn at its deadline; a request for input
becomes a dialog built from its schema (checked before it is sent, a secret's value never in
the audit log), a page to open, a terminal prompt per field, and a `--yes` run declines."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPlainTextEdit

from app.cli.mcp_asks import TerminalAsks
from app.domain.elicit_form import Form, parse, problem, shown
from app.tools.audit import AuditLog
from app.tools.mcp.asks import Refusal
from app.tools.mcp.config import McpServer, save_servers
from app.tools.mcp.elicit import read_form
from app.tools.mcp.sampling import SampleRequest, read_request
from app.tools.mcp.tools import McpPool
from tests.keys.test_endpoints import cli
from tests.ui.test_window import make_window, pending_card

ASKER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_asking_server.py")
SERVER = McpServer(command=sys.executable, args=(ASKER,))


@pytest.fixture()
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data"),
           "HARMONY_DESK_CACHE": str(tmp_path / "cache")}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **env}


def _call(tool: str, arguments: str = "{}") -> str:
    return (f"<|channel|>commentary to=functions.asker__{tool} <|constrain|>json<|message|>"
            f"{arguments}<|call|>")  # fmt: skip


def _said(envelope: Any) -> str:
    return json.dumps(envelope, ensure_ascii=False)


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def test_a_form_is_read_from_a_flat_schema_checked_and_kept_secret_in_the_audit() -> None:
    schema = {"type": "object", "required": ["count", "email"], "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 5, "title": "How many"},
        "email": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date"},
        "colour": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
        "extras": {"type": "array", "items": {"anyOf": [{"const": "lid", "title": "Lid"}]}},
        "gift": {"type": "boolean"},
        "api_token": {"type": "string", "description": "Your API token"},
    }}  # fmt: skip
    form = read_form("asker", "Tell me.", schema)
    assert isinstance(form, Form)
    by = {f.name: f for f in form.fields}
    assert [f.kind for f in form.fields] == ["integer", "text", "text", "choice", "choices", "boolean", "text"]
    assert by["count"].required and not by["gift"].required and by["colour"].options == (("r", "Red"), ("g", "Green"))
    assert problem(by["count"], parse(by["count"], "9")) == "“How many” takes a whole number from 1 to 5."
    assert problem(by["count"], parse(by["count"], "2.5")) and problem(by["count"], parse(by["count"], "3")) == ""
    assert problem(by["count"], None) == "“How many” is required." and problem(by["gift"], None) == ""
    assert problem(by["email"], "not an address") and problem(by["email"], "ada@example.com") == ""
    assert problem(by["when"], "31/12/2026") and problem(by["when"], "2026-12-31") == ""
    assert parse(by["colour"], "2") == "g" and parse(by["colour"], "Red") == "r" and parse(by["gift"], "yes") is True
    assert parse(by["extras"], "Lid") == ["lid"] and problem(by["extras"], ["lid", "cup"])
    assert by["api_token"].secret and not by["email"].secret
    assert shown(form, {"api_token": "tok-1234", "email": "ada@example.com"}) == {
        "api_token": "[hidden]", "email": "ada@example.com"}  # fmt: skip
    nested = read_form("asker", "x", {"type": "object", "properties": {"address": {"type": "object"}}})
    assert isinstance(nested, Refusal) and "the field “address” is object" in nested.message


def test_a_sampling_request_is_read_within_the_hosts_bounds() -> None:
    def params(**extra: Any) -> types.CreateMessageRequestParams:
        said = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Hi"))
        return types.CreateMessageRequestParams(**{"messages": [said], "max_tokens": 5000, **extra})

    request = read_request("asker", params(temperature=7.0, stop_sequences=["END", ""]))
    assert isinstance(request, SampleRequest)
    assert (request.max_tokens, request.asked_tokens, request.temperature, request.stop) == (1024, 5000, 2.0, ("END",))
    picture = types.SamplingMessage(role="user", content=types.ImageContent(type="image", data="AAAA", mime_type="image/png"))
    refused = read_request("asker", params(messages=[picture]))
    assert isinstance(refused, Refusal) and "image content" in refused.message
    huge = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="x" * 40_000))
    too_big = read_request("asker", params(messages=[huge]))
    assert isinstance(too_big, Refusal) and "40,000 characters" in too_big.message


def test_sampling_is_answered_by_the_default_model_after_approval_and_refused_otherwise(
    smollm_client: Any, folders: dict[str, str]
) -> None:
    from app.engine.local.session import ChatSession
    from app.templates.registry import default_template_name, get_template

    metadata = smollm_client.info.metadata
    template = get_template(default_template_name(metadata)).for_model(metadata)
    out = io.StringIO()
    asks = TerminalAsks(False, stdin=io.StringIO("y\nn\ny\n"), out=out)
    asks.conversation_id = "cli-sampling"
    asks.session = lambda r: (ChatSession(smollm_client, template, max_tokens=r.max_tokens), "SmolLM2-135M")
    made: list[McpPool] = []
    pool = McpPool(lambda: {"asker": SERVER}, hooks=asks.hooks(lambda: made[0]))
    made.append(pool)
    try:
        answered = pool.call("asker", "haiku", {"topic": "tea", "max_tokens": 24}, None)
        text = _said(answered["content"])
        assert answered["ok"] and "SmolLM2-135M said (" in text, answered
        assert len(text.split("):", 1)[1].strip(' "}')) > 3, text  # the model wrote something
        asked = out.getvalue()
        assert "The MCP server “asker” asks the model to answer this (at most 24 tokens)" in asked
        assert "System: You are a poet." in asked and "User: Write a haiku about tea." in asked
        denied = pool.call("asker", "haiku", {"topic": "rain"}, None)
        assert "sampling failed" in _said(denied) and "“asker” was declined (asked: denied)" in _said(denied)
        asks.session = None  # no model loaded
        none = pool.call("asker", "haiku", {"topic": "snow"}, None)
        assert "No model is loaded to answer the sampling request of “asker”" in _said(none)
        assert any("sampling: answered by SmolLM2-135M" in line for line in pool.logs["asker"])
    finally:
        pool.close()
    entries = AuditLog().read("cli-sampling").entries
    assert [e["tool"] for e in entries] == ["mcp:asker.sampling"] * 3
    first, second, third = entries
    assert first["ok"] and first["decision"] == "asked: allowed" and first["result"]["model"] == "SmolLM2-135M"
    assert first["arguments_run"]["messages"] == [{"role": "user", "text": "Write a haiku about tea."}]
    assert not second["ok"] and second["decision"] == "asked: denied" and second["error"]["code"] == "-1"
    assert not third["ok"] and "No model is loaded" in third["error"]["message"]


def test_the_window_asks_before_its_model_answers_a_server_and_withdraws_what_waits_too_long(
    qtbot: Any, qloop: Any, tmp_path: Path, folders: dict[str, str]
) -> None:
    from app.ui.mcp.elicit_dialog import attach
    from app.ui.mcp.sampling_dialog import SamplingDialog

    save_servers({"asker": SERVER})
    scripts = [_call("haiku", '{"topic": "tea"}'), _final("Steam over the cup."), _final("Done."),
               _call("haiku", '{"topic": "tea"}'), _final("Leaves settle."), _final("Done again."),
               _call("haiku", '{"topic": "tea"}'), _final("It did not answer."),
               _call("haiku", '{"topic": "tea"}'), _final("Refused.")]  # fmt: skip
    window, _ = make_window(qtbot, tmp_path, scripts)
    presenter = attach(window)
    controller = window.controller
    controller.set_tools(("mcp:asker",))

    def turn(text: str) -> Any:
        window.composer.box.setPlainText(text)
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
        return pending_card(qtbot, window)

    card = turn("A haiku, please.")
    with qtbot.waitSignal(presenter.dialogShown, timeout=30_000) as shown_dialog:
        card.run.click()
    dialog = shown_dialog.args[0]
    assert isinstance(dialog, SamplingDialog) and dialog.windowTitle() == "asker asks the model"
    assert dialog.findChild(QPlainTextEdit, "system_prompt").toPlainText() == "You are a poet."
    assert dialog.findChild(QPlainTextEdit, "messages").toPlainText() == "User: Write a haiku about tea."
    assert "at most 40 tokens" in dialog.limit.text()
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        dialog.buttons["chat"].click()
    assert "scripted said (endTurn): Steam over the cup." in card.result.toPlainText()
    card = turn("Another.")  # allowed in this chat: no dialog this time
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        card.run.click()
    assert "Leaves settle." in card.result.toPlainText() and not presenter.dialogs
    first_chat = controller.doc.id
    controller.tools.mcp.hooks.sampling.deadline_s = 1.0  # type: ignore[union-attr]
    controller.new_chat()
    controller.set_tools(("mcp:asker",))
    card = turn("And one more.")
    with qtbot.waitSignal(presenter.dialogShown, timeout=30_000) as shown_dialog:
        card.run.click()
    waiting = shown_dialog.args[0]
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        pass  # nobody answers: the deadline withdraws the request
    qtbot.waitUntil(lambda: not waiting.isVisible(), timeout=5_000)  # withdrawn: the dialog went
    assert not presenter.dialogs
    assert "was not answered within 1 s" in card.result.toPlainText()
    decisions = [e["decision"] for e in AuditLog().read(first_chat).entries if e["tool"] == "mcp:asker.sampling"]
    assert decisions == ["asked: allow for this conversation", "allow for this conversation"]
    late = [e for e in AuditLog().read(controller.doc.id).entries if e["tool"] == "mcp:asker.sampling"]
    assert len(late) == 1 and late[0]["decision"] == "not answered in time" and late[0]["error"]["code"] == "-32001"
    controller.tools.mcp.hooks.caps.per_turn["sampling"] = 0  # type: ignore[union-attr]
    card = turn("Past the cap.")
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        card.run.click()
    assert "the most this host answers in one turn" in card.result.toPlainText()
    qtbot.waitUntil(lambda: "in one turn" in window.statusBar().currentMessage(), timeout=5_000)
    assert not presenter.dialogs  # refused before anyone was asked
    controller.tools.close()


def test_the_window_asks_for_input_with_a_dialog_built_from_the_schema(
    qtbot: Any, qloop: Any, tmp_path: Path, folders: dict[str, str]
) -> None:
    from app.ui.mcp.elicit_dialog import FormDialog, NumberSpin, UrlDialog, attach

    save_servers({"asker": SERVER})
    scripts = [_call("order"), _final("Ordered."), _call("sign_up"), _final("Signed up."),
               _call("order"), _final("No mugs."), _call("visit"), _final("Paid."),
               _call("sign_up"), _final("Nobody answered.")]  # fmt: skip
    window, _ = make_window(qtbot, tmp_path, scripts)
    opened: list[str] = []
    presenter = attach(window, open_url=opened.append)
    controller = window.controller
    controller.set_tools(("mcp:asker",))

    def dialog_of(text: str) -> tuple[Any, Any]:
        window.composer.box.setPlainText(text)
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
        card = pending_card(qtbot, window)
        with qtbot.waitSignal(presenter.dialogShown, timeout=30_000) as shown_dialog:
            card.run.click()
        return card, shown_dialog.args[0]

    card, form = dialog_of("Order mugs.")
    assert isinstance(form, FormDialog) and form.findChild(QLabel, "message").text() == "Which mugs shall I order?"
    colour = form.widgets["colour"]
    assert isinstance(colour, QComboBox) and [colour.itemText(i) for i in range(colour.count())][1:] == ["red", "green", "blue"]
    colour.setCurrentIndex(colour.findData("green"))
    count = form.widgets["count"]
    assert isinstance(count, NumberSpin) and (count.minimum(), count.maximum()) == (0, 5)  # 0: not given
    form.send_button.click()
    assert form.isVisible() and "“How many” is required." in form.problem.text()
    count.setValue(3)
    form.widgets["gift"].setChecked(True)
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        form.send_button.click()
    assert json.loads(card.result.toPlainText())["result"] == 'ordered: {"colour":"green","count":3,"gift":true}'
    card, form = dialog_of("Sign me up.")
    token = form.widgets["api_token"]
    assert token.echoMode() == QLineEdit.EchoMode.Password  # a secret is not shown as it is typed
    form.widgets["email"].setText("ada@example.com")
    token.setText("tok-0123456789")
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        form.send_button.click()
    assert "tok-0123456789" in card.result.toPlainText()  # the server got it
    card, form = dialog_of("Order again.")
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        form.decline_button.click()
    assert "no order: decline" in card.result.toPlainText()
    card, page = dialog_of("Pay.")
    assert isinstance(page, UrlDialog) and page.findChild(QLabel, "url").text() == "https://example.com/pay?id=7"
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        page.open_button.click()
    assert opened == ["https://example.com/pay?id=7"] and "visit: accept" in card.result.toPlainText()
    controller.tools.mcp.hooks.elicitation.deadline_s = 1.0  # type: ignore[union-attr]
    card, form = dialog_of("Sign up, then wait.")
    with qtbot.waitSignal(controller.replyFinished, timeout=30_000):
        pass  # nobody answers: withdrawn at the deadline, the server told so
    qtbot.waitUntil(lambda: not form.isVisible(), timeout=5_000)
    said = "elicitation failed: The request for input of “asker” was not answered within 1 s."
    assert said in json.loads(card.result.toPlainText())["result"]
    entries = [e for e in AuditLog().read(controller.doc.id).entries if e["tool"] == "mcp:asker.elicitation"]
    assert [e["decision"] for e in entries] == ["accept", "accept", "decline", "accept", "not answered in time"]
    assert entries[0]["result"] == {"action": "accept", "answered": ["colour", "count", "gift"]}
    assert entries[1]["result"]["answered"] == ["email", "api_token"]  # names, never a typed value
    assert "tok-0123456789" not in json.dumps(entries) and "ada@example.com" not in json.dumps(entries)
    assert entries[3]["arguments_run"] == {"mode": "url", "message": "Confirm the payment.", "url": "https://example.com/pay?id=7"}
    controller.tools.close()


@pytest.mark.slow
def test_the_terminal_chat_asks_for_input_field_by_field(folders: dict[str, str], tmp_path: Path) -> None:
    save_servers({"asker": SERVER})
    done = cli(["chat", "--model", "default", "--mcp", "asker", "--tool-choice", "asker__order",
                "--max-tool-calls", "1", "--max-tokens", "40", "--temperature", "0", "--prompt", "Order mugs."],
               folders, stdin="y\ny\ngreen\n9\n2\nyes\n")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[input] The MCP server “asker” asks: Which mugs shall I order?" in done.stderr
    assert "Colour * (one of: red, green, blue):" in done.stderr and "The mug's colour." in done.stderr
    assert "“How many” takes a whole number from 1 to 5." in done.stderr  # said, then asked again
    audit = [json.loads(line) for line in (tmp_path / "data" / "tool-audit.jsonl").read_text().splitlines()]
    called = [e for e in audit if e["tool"] == "functions.asker__order"]
    assert called and called[0]["result"] == {"result": 'ordered: {"colour":"green","count":2,"gift":true}'}
    asked = [e for e in audit if e["tool"] == "mcp:asker.elicitation"]
    assert asked[0]["decision"] == "accept" and asked[0]["conversation"] == called[0]["conversation"]


def test_a_yes_run_declines_a_request_for_input_and_says_so(folders: dict[str, str]) -> None:
    out = io.StringIO()
    asks = TerminalAsks(True, stdin=io.StringIO(""), out=out)  # what `chat --yes` answers with
    asks.conversation_id = "cli-yes"
    made: list[McpPool] = []
    pool = McpPool(lambda: {"asker": SERVER}, hooks=asks.hooks(lambda: made[0]))
    made.append(pool)
    try:
        assert pool.call("asker", "order", {}, None)["content"] == {"result": "no order: decline"}
        assert pool.call("asker", "visit", {}, None)["content"] == {"result": "visit: decline"}
        sampled = pool.call("asker", "haiku", {"topic": "tea"}, None)  # allowed, as its tool calls are
        assert "No model is loaded" in _said(sampled)
    finally:
        pool.close()
    said = out.getvalue()
    assert "[input] The MCP server “asker” asked: Which mugs shall I order?" in said
    assert "Declined: a --yes run never asks for input." in said and "https://example.com/pay?id=7" in said
    assert "“asker” asks the model; allowed without asking (--yes)" in said
    decisions = [e["decision"] for e in AuditLog().read("cli-yes").entries]
    assert decisions == ["decline (a --yes run never asks)", "decline (a --yes run never asks)",
                         "allowed without asking"]  # fmt: skip
