"""The window's MCP servers, offscreen through the real controllers: File ▸ MCP servers… adds,
tests, restricts, enables and imports servers (secrets to a real keyring, never a file), and a
conversation's call to an MCP tool waits on a card that names the server, then runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocumentFragment

from app.secrets import Secrets
from tests.keys.test_endpoints import secret_service, secret_service_backend
from tests.tools.mcp.mcp_page import config, mcp_page
from tests.tools.mcp.test_mcp_config import TOKEN, _files_hold
from tests.tools.mcp.test_mcp_host import ENV_SERVER
from tests.ui.test_window import make_window, pending_card

__all__ = ["config", "secret_service"]


def test_the_mcp_page_adds_tests_restricts_enables_and_imports_servers(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path, secret_service: dict[str, str]
) -> None:
    keyring = Secrets(secret_service_backend())  # the private Secret Service
    window, page = mcp_page(qtbot, tmp_path, keyring)
    page.name.setText("envy")
    page.where.setText(f"{sys.executable} {ENV_SERVER}")
    page.secrets.setPlainText(f"API_TOKEN={TOKEN}")
    page.save_button.click()
    qtbot.waitUntil(lambda: page.servers.count() == 1, timeout=10_000)
    assert TOKEN not in page.secrets.toPlainText() and page.secrets.toPlainText() == "API_TOKEN="
    saved = json.loads((config / "mcp.json").read_text())["mcpServers"]["envy"]
    assert saved["secret_env"] == ["API_TOKEN"] and "env" not in saved
    page.test_button.click()
    qtbot.waitUntil(
        lambda: page.tools.count() >= 5 or page.problem_banner.isVisible(), timeout=30_000
    )
    assert page.tools.count() >= 5, (page.problem_banner.text(), page.problem_banner.details())
    names = [page.tools.item(i).text() for i in range(page.tools.count())]
    assert {"secret", "slow", "big", "square", "crash"} <= set(names)
    assert (
        "tokens to each prompt" in page.offers.text()
        and "1 resources · 1 prompts" in page.offers.text()
    )
    assert "started" in page.log.toPlainText()
    window.mcp.pool.note("envy", "a line the server logged just now")  # the open page follows
    qtbot.waitUntil(lambda: "logged just now" in page.log.toPlainText(), timeout=5000)
    said = window.mcp.pool.call("envy", "secret", {"name": "API_TOKEN"}, None)  # from the keyring
    assert f"{len(TOKEN)} characters" in json.dumps(said["content"])
    page.tools.item(names.index("crash")).setCheckState(Qt.CheckState.Unchecked)
    page.save_button.click()  # a blank secret keeps the stored value
    qtbot.waitUntil(lambda: "saved" in page.status.text(), timeout=10_000)
    saved = json.loads((config / "mcp.json").read_text())["mcpServers"]["envy"]
    assert "crash" not in saved["enabled_tools"] and "square" in saved["enabled_tools"]
    page.use.setChecked(True)
    assert "mcp:envy" in window.controller.doc.tools
    before = {t.name for t in window.controller.tools.of(window.controller.doc).registry}
    assert "envy__crash" not in before and "envy__slow" in before  # the allow-list holds
    page.tools.item(names.index("slow")).setCheckState(Qt.CheckState.Unchecked)
    page.status.setText("")
    page.save_button.click()
    qtbot.waitUntil(lambda: page.status.text() == "envy saved.", timeout=10_000)  # saved, listed
    after = {t.name for t in window.controller.tools.of(window.controller.doc).registry}
    assert "envy__slow" not in after and "envy__square" in after  # the conversation took the change
    assert "mcp:envy" in window.controller.tools.available()
    claude = tmp_path / "claude_desktop_config.json"
    claude.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "github": {
                        "command": "npx",
                        "args": ["-y", "server-github"],
                        "env": {"GITHUB_TOKEN": TOKEN + "-gh"},
                    }
                }
            }
        )
    )
    page.import_file(claude)
    qtbot.waitUntil(lambda: "Imported 1" in page.status.text(), timeout=10_000)
    assert "Moved to the keyring: github: GITHUB_TOKEN" in page.status.text()
    qtbot.waitUntil(lambda: page.servers.count() == 2, timeout=10_000)
    page.test_button.setFocus()
    window.mcp.pool.close()
    claude.unlink()  # the other app's file held it; nothing Harmony Desk wrote does
    assert _files_hold(tmp_path, TOKEN) == []


def test_an_mcp_tool_call_waits_on_a_card_that_names_its_server(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path
) -> None:
    from app.tools.mcp.config import McpServer, save_servers

    save_servers({"envy": McpServer(command=sys.executable, args=(ENV_SERVER,))})
    call = (
        "<|channel|>commentary to=functions.envy__square <|constrain|>json<|message|>"
        '{"n": 12}<|call|>'
    )
    window, client = make_window(
        qtbot, tmp_path, [call, "<|channel|>final<|message|>144.<|return|>"]
    )
    window.controller.set_tools(("mcp:envy",))
    window.composer.box.setPlainText("Square twelve")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    # the title as a person reads it: the tool's own name in bold, its server, what that is —
    # never the namespaced name the model called (that stays as the tooltip)
    shown = QTextDocumentFragment.fromHtml(card.title.text()).toPlainText()
    assert shown.split(" · ")[:3] == ["square", "envy", "MCP server"], shown
    assert "envy__square" not in shown and card.title.text().startswith("<b>square</b>")
    assert card.title.toolTip() == "The model called it functions.envy__square"
    with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
        card.run.click()
    assert card.data["state"] == "ok" and "144" in card.result.toPlainText()
    assert '{"ok": true, "content": {"result": 144}}' in client.encoding.decode(client.prompts[1])
    window.controller.tools.close()
    assert window.controller.tools.mcp.running() == []


def test_a_server_that_cannot_start_fails_the_turn_with_its_reason(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path
) -> None:
    from app.tools.mcp.config import McpServer, save_servers

    broken = McpServer(
        command=sys.executable,
        args=("-c", "import sys; sys.stderr.write('missing API key'); sys.exit(1)"),
    )
    save_servers({"broken": broken})
    window, _ = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>Hi.<|return|>"])
    window.controller.set_tools(("mcp:broken",))
    with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
        window.composer.box.setPlainText("Hello")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None and reply.state == "failed"
    assert "“broken” could not start: it exited with code 1" in str(reply.error)
    assert any(
        "missing API key" in line for line in window.controller.tools.mcp.logs["broken"]
    )  # its stderr
    assert window.controller.doc.turns[-1].version.user_text == "Hello"  # the message is kept


def test_the_composer_inserts_a_servers_prompt_and_attaches_a_resource_as_plain_text(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path
) -> None:
    from app.tools.mcp.config import McpServer, save_servers

    save_servers({"envy": McpServer(command=sys.executable, args=(ENV_SERVER,))})
    reply = "<|channel|>final<|message|>Noted.<|return|>"
    window, client = make_window(qtbot, tmp_path, [reply])
    window.controller.set_tools(("mcp:envy",))
    probe = window.mcp.probe("envy")  # what the Tools… menu lists for the conversation
    assert probe.resources == (("notes://shopping", "shopping"),)
    assert probe.prompts == (("summarise", "Ask for a summary.", ("topic",)),)
    window.insert_offer(("prompt", "envy", "summarise"), {"topic": "tides"})
    expected = "Summarise what we know about tides in three bullet points."
    qtbot.waitUntil(lambda: expected in window.composer.box.toPlainText(), timeout=10_000)
    window.composer.box.clear()
    window.insert_offer(("resource", "envy", "notes://shopping"), {})
    qtbot.waitUntil(lambda: "oat milk" in window.composer.box.toPlainText(), timeout=10_000)
    assert window.composer.box.toPlainText().startswith("Context from envy (notes://shopping):")
    window.controller.set_tools(())
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    from app.harmony import encoding as enc

    prompt = client.prompts[-1]
    text = client.encoding.decode(prompt)
    assert "oat milk" in text
    assert text.count("<|start|>") == prompt.count(enc.START) + 1  # the resource's stayed text
    window.controller.tools.close()
