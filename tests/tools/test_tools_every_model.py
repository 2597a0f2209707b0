"""Tools on a plain-text model, through every frontend: the terminal chat on the real bundled
SmolLM2 (Hermes calls) with a real MCP server, the window on a scripted Hermes model, and what
each frontend says when the model's template has no tool-call format."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.controllers.bridge import EngineBridge
from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost
from app.engine.local.scripted import ScriptedClient
from app.ui.transcript.cards import ToolCard
from app.ui.window.main_window import MainWindow, UiState
from tests.gui_helpers import all_text
from tests.keys.test_endpoints import cli, secret_service
from tests.tools.mcp.test_mcp_config import _env
from tests.ui.test_window import pending_card, segments

__all__ = ["secret_service"]
TIME = str(Path(sys.executable).parent / "mcp-server-time")
OSLO = "What time is it in Oslo?"


def _audited(tmp_path: Path) -> list[dict[str, Any]]:
    found = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and "audit" in p.name]
    return [json.loads(line) for p in found for line in p.read_text().splitlines() if line.strip()]


def test_the_terminal_chat_calls_an_mcp_tool_on_the_bundled_model(secret_service: dict[str, str], tmp_path: Path) -> None:
    env = _env(tmp_path, secret_service)
    assert cli(["mcp", "add", "time", "--", TIME, "--local-timezone", "UTC"], env).returncode == 0
    done = cli(["chat", "--model", "default", "--mcp", "time", "--tool-choice", "required", "--yes",
                "--max-tokens", "120", "--temperature", "0", "--prompt", OSLO], env)
    assert done.returncode == 0, done.stderr[-2000:]
    asked = [line for line in done.stderr.splitlines() if line.startswith("[tool call_1]")]
    assert asked and "get_current_time · time (" in asked[0], done.stderr[-2000:]
    assert any("] ok {" in line and '"datetime"' in line for line in asked), asked  # it ran, for real
    assert done.stdout.strip(), "the model answered after the tool's result"
    records = _audited(tmp_path)
    assert records and records[0]["tool"] == "functions.time__get_current_time", records


def test_the_terminal_says_when_the_model_has_no_tool_format(secret_service: dict[str, str], tmp_path: Path) -> None:
    env = _env(tmp_path, secret_service)
    assert cli(["mcp", "add", "time", "--", TIME], env).returncode == 0
    base = ["chat", "--model", "default", "--template", "completion", "--mcp", "time", "--max-tokens", "4"]
    auto = cli([*base, "--prompt", OSLO], env)
    assert auto.returncode == 0, auto.stderr[-2000:]
    assert "[E-TOOLS-UNAVAILABLE] This model's chat template has no tool-call format" in auto.stderr
    assert "functions.time__get_current_time" in auto.stderr  # which tools were not offered
    forced = cli([*base, "--tool-choice", "required", "--prompt", OSLO], env)
    assert forced.returncode == 1 and "tool_choice 'required' needs a call" in forced.stderr


def _window(qtbot: Any, tmp_path: Path, template: str, scripts: list[str]) -> tuple[MainWindow, ScriptedClient]:
    client = ScriptedClient(scripts)
    host = ModelHost(EngineBridge())
    host.use(client, template)
    window = MainWindow(ChatController(host, None), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    window.controller.settle()
    window.show_features()
    return window, client


def test_the_window_runs_a_hermes_call_and_feeds_the_result_back(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    call = '<tool_call>\n{"name": "calculate", "arguments": {"expression": "1+1"}}\n</tool_call>'
    window, client = _window(qtbot, tmp_path, "smollm2", [call, "It is 2."])
    window.controller.set_tools(("calculate",))
    assert window.composer.tools_button.isEnabled() and not window.composer.effort.isVisible()
    window.composer.box.setPlainText("Add one and one")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    assert "calculate" in card.title.text()
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        card.run.click()
    assert card.data["state"] == "ok" and '"result": 2' in card.result.toPlainText()
    first = client.encoding.decode(client.prompts[0])
    assert "<tools>" in first and '"name": "calculate"' in first  # declared to the model
    second = client.encoding.decode(client.prompts[1])
    assert '<tool_call>\n{"name": "calculate", "arguments": {"expression": "1+1"}}\n</tool_call>' in second
    assert "<tool_response>" in second and '"result": 2' in second
    shown = all_text(window.transcript)
    assert "It is 2." in shown and "<tool_call>" not in shown


def test_a_malformed_call_is_a_notice_and_never_runs(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    bad = '<tool_call>\n{"name": "calculate", "arguments": {"expression": </tool_call>'
    window, client = _window(qtbot, tmp_path, "smollm2", [bad])
    window.controller.set_tools(("calculate",))
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        window.composer.box.setPlainText("Add")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    assert not [w for w in segments(window) if isinstance(w, ToolCard)] and len(client.prompts) == 1
    shown = all_text(window.transcript)
    assert "The model tried to call calculate; the call was not valid" in shown


def test_the_window_offers_tools_and_effort_only_to_models_that_have_them(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = _window(qtbot, tmp_path, "completion", ["Hello."])
    window.controller.set_tools(("calculate",))
    window.show_features()
    assert not window.composer.tools_button.isEnabled() and not window.composer.effort.isVisible()
    assert "no tool-call format" in window.composer.tools_button.toolTip()
    assert window.banner.isVisible() and "calculate" in window.banner.text()
    harmony, _ = _window(qtbot, tmp_path, "harmony", ["<|channel|>final<|message|>Hi.<|return|>"])
    assert harmony.composer.effort.isVisible() and harmony.composer.tools_button.isEnabled()


def test_the_window_on_the_real_default_model_calls_a_required_tool(qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any) -> None:
    host = ModelHost(EngineBridge())
    window = MainWindow(ChatController(host, None), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(host.loaded, timeout=180_000):
            window.load_model(None, n_ctx=2048, threads=1)  # SmolLM2: Hermes calls
        window.controller.settle()
        assert window.composer.tools_button.isEnabled() and not window.composer.effort.isVisible()
        window.controller.set_tools(("calculate",))
        window.controller.tool_choice = "required"  # Tools… ▸ Require a tool call
        window.controller.max_tokens = 80
        window.composer.box.setPlainText("What is 6 times 7?")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
        card = pending_card(qtbot, window)
        assert "calculate" in card.title.text()
        with qtbot.waitSignal(window.controller.replyFinished, timeout=120_000):
            card.run.click()
        assert card.data["state"] in ("ok", "error"), card.data  # ran: the model's expression decides which
        assert '"result"' in card.result.toPlainText() or "E-" in card.result.toPlainText()
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None and reply.debug.timings["generated"] > 0
        assert "<tool_call>" not in all_text(window.transcript)
    finally:
        window.close()
        window.host.close()
