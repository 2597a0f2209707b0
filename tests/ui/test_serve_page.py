"""File ▸ Serve…, offscreen, on a window whose model is a scripted token source (the real
models are served in tests/server): the page shows the server's address (copyable), the key, the
model and the counts of an `openai` client's requests; a client's Connect writes that client's
file into a private HOME, handed to the page (the process's HOME is a trap that stays empty),
Show config writes nothing and Undo takes connect's changes out; a file that cannot be read, a
port in use and a server that is off are said on the page, never raised."""

from __future__ import annotations

import socket
import tomllib
from pathlib import Path
from typing import Any

import openai
import pytest
from PySide6.QtGui import QGuiApplication

from app.clients import CLIENTS, PLACEHOLDER_KEY
from app.controllers.client_configs import ClientConfigs
from app.ui.window.main_window import MainWindow
from app.ui.window.serve_page import KEY_WORDS, NOT_SERVING, ServePage
from tests.ui.test_window import make_window

ANSWER = "<|channel|>final<|message|>Served.<|return|>"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's folder the page is given; the process's own HOME is a trap."""
    trap = tmp_path / "trap"
    trap.mkdir()
    monkeypatch.setenv("HOME", str(trap))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(trap / ".config"))
    mine = tmp_path / "home"
    mine.mkdir()
    return mine


def open_page(qtbot: Any, tmp_path: Path, home: Path) -> tuple[MainWindow, ServePage]:
    window, _ = make_window(qtbot, tmp_path, [ANSWER, ANSWER])
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    page = window.serve.show_page(ClientConfigs(env, home))
    return window, page


def serve(page: ServePage) -> str:
    page.port.setValue(free_port())
    page.on.setChecked(True)
    assert page.on.isChecked() and page.switch.action.isChecked(), page.error.text()
    return page.address.text()


def test_the_page_shows_the_address_key_model_and_requests(qtbot: Any, qloop: Any, tmp_path: Path, home: Path) -> None:
    window, page = open_page(qtbot, tmp_path, home)
    file_menu = window.menuBar().actions()[0].menu()
    assert window.serve.page_action in file_menu.actions()  # File ▸ Serve…
    window.serve.page_action.trigger()
    assert window.serve.page is page and page.isVisible()
    assert not page.connects["codex"].isEnabled() and page.model.text() == NOT_SERVING

    address = serve(page)
    assert address == f"http://127.0.0.1:{page.port.value()}/v1" and not page.port.isEnabled()
    assert KEY_WORDS in page.key.text() and PLACEHOLDER_KEY in page.key.text()
    assert page.model.text().startswith(f"{window.serve.serving.served.name} (context ")  # type: ignore[union-attr]
    page.copy.click()
    assert QGuiApplication.clipboard().text() == address
    assert page.requests.text().startswith("0 served · 0 waiting")

    api = openai.OpenAI(base_url=address, api_key="anything", max_retries=0)
    answer = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    api.close()
    assert answer.choices[0].message.content == "Served."
    qtbot.waitUntil(lambda: page.requests.text().startswith("1 served · 0 waiting"), timeout=5000)

    window.serve.action.setChecked(False)  # the quick switch and the page agree
    assert not page.on.isChecked() and page.address.text() == "" and page.port.isEnabled()


def test_a_clients_button_writes_its_config_into_the_home_it_was_given(qtbot: Any, qloop: Any, tmp_path: Path, home: Path) -> None:
    window, page = open_page(qtbot, tmp_path, home)
    assert list(page.connects) == list(CLIENTS)
    address = serve(page)
    name = window.serve.serving.served.name  # type: ignore[union-attr]

    page.shows["claude-code"].click()
    assert f'"ANTHROPIC_BASE_URL": "{address.removesuffix("/v1")}"' in page.output.toPlainText()
    page.connects["codex"].click()
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert (provider["base_url"], provider["experimental_bearer_token"], config["model"]) == (address, PLACEHOLDER_KEY, name)
    said = page.output.toPlainText()
    assert "model_provider: added" in said and "connect codex --undo" in said and page.error.isHidden()

    page.undos["codex"].click()
    assert not (home / ".codex" / "config.toml").exists() and "removed" in page.output.toPlainText()
    assert [p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()] == []
    assert not any((tmp_path / "trap").iterdir())  # the process's HOME was never touched
    window.serve.action.setChecked(False)


def test_a_file_that_cannot_be_read_is_said_on_the_page(qtbot: Any, qloop: Any, tmp_path: Path, home: Path) -> None:
    window, page = open_page(qtbot, tmp_path, home)
    page.connect_client("codex")  # the server is off: said, nothing written
    assert page.error.text() == NOT_SERVING and not page.error.isHidden()
    serve(page)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"env": ')
    page.connects["claude-code"].click()
    assert str(settings) in page.error.text() and "nothing was changed" in page.error.text()
    assert settings.read_text() == '{"env": ' and not page.error.isHidden()
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").mkdir()  # a folder where the file should be
    page.undos["codex"].click()
    assert "config.toml is not a regular file" in page.error.text()
    page.connects["opencode"].click()  # the next button that works clears the error
    assert page.error.isHidden() and (home / ".config" / "opencode" / "opencode.json").is_file()
    window.serve.action.setChecked(False)


# uvicorn ends its thread with SystemExit when it cannot bind: ServeHost's way of failing to start
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_port_in_use_is_said_on_the_page(qtbot: Any, qloop: Any, tmp_path: Path, home: Path) -> None:
    window, page = open_page(qtbot, tmp_path, home)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        page.port.setValue(taken.getsockname()[1])
        page.on.setChecked(True)
    assert not page.on.isChecked() and not window.serve.serving.running
    assert "could not listen" in page.error.text() and not page.error.isHidden()
