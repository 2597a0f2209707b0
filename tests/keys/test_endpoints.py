"""API keys in a real Secret Service (gnome-keyring on a private D-Bus session), the endpoints and
keys commands, and a remote chat from the command line against a real server on loopback; then
every file the session wrote is searched for the key."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.secrets import Secrets
from tests.keyring_service import PrivateSecretService

KEY = "sk-live-7f3a9c2e51d04b8e"


@pytest.fixture(scope="module")
def secret_service() -> Iterator[dict[str, str]]:
    service = PrivateSecretService()
    env = service.start()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        service.stop()


def secret_service_backend() -> Any:
    from keyring.backends import SecretService

    return SecretService.Keyring()


def cli(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_keys_live_in_the_secret_service(secret_service: dict[str, str]) -> None:
    secrets = Secrets(secret_service_backend())
    assert secrets.saved and secrets.problem is None
    secrets.set("work", KEY)
    assert Secrets(secret_service_backend()).get("work") == KEY  # another reader sees it
    assert secrets.delete("work") and Secrets(secret_service_backend()).get("work") is None
    assert not secrets.delete("work")
    with pytest.raises(Exception, match="not a key name"):
        secrets.set("../etc", KEY)


def test_without_a_keyring_keys_stay_in_memory_and_it_says_so() -> None:
    from keyring.backends import fail

    secrets = Secrets(fail.Keyring())
    assert not secrets.saved and "in memory for this run only" in (secrets.problem or "")
    secrets.set("work", KEY)
    assert secrets.get("work") == KEY  # usable now, gone with the process


def test_keys_set_refuses_when_no_keyring_is_reachable(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={tmp_path}/no-bus"
    env["HARMONY_DESK_CONFIG"] = str(tmp_path / "config")
    done = cli(["keys", "set", "work"], env, stdin=KEY + "\n")
    assert done.returncode == 1 and "no usable keyring" in done.stderr and KEY not in done.stderr
    assert not (tmp_path / "config").exists() or KEY not in "".join(
        p.read_text(errors="replace") for p in (tmp_path / "config").rglob("*") if p.is_file()
    )


def test_an_endpoint_with_a_key_end_to_end_and_the_key_is_nowhere_else(
    secret_service: dict[str, str], tmp_path: Path, gemma_model: Any
) -> None:
    from tests.engine.test_remote import start_server
    from tests.fault_proxy import FaultProxy

    port, server = start_server(gemma_model)
    proxy = FaultProxy(port)  # records the Authorization header the server got
    try:
        env = {
            **os.environ,
            **secret_service,
            "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
            "HARMONY_DESK_DATA": str(tmp_path / "data"),
            "HARMONY_DESK_CACHE": str(tmp_path / "cache"),
        }
        add = cli(["endpoints", "add", "lab", "--base-url", proxy.url, "--model", "gemma",
                   "--key-name", "lab-key", "--temperature", "0"], env)
        assert add.returncode == 0, add.stderr
        listed = cli(["endpoints", "list"], env)
        assert "lab" in listed.stdout and "lab-key (not set)" in listed.stdout
        untested = cli(["endpoints", "test", "lab"], env)
        assert untested.returncode == 1 and "keys set lab-key" in untested.stderr
        stored = cli(["keys", "set", "lab-key"], env, stdin=KEY + "\n")
        assert stored.returncode == 0, stored.stderr
        tested = cli(["endpoints", "test", "lab"], env)
        assert tested.returncode == 0 and "its models: gemma (gemma offered)" in tested.stdout
        chat = cli(["chat", "--endpoint", "lab", "--prompt", "The capital of France is",
                    "--max-tokens", "8", "--save"], env)
        assert chat.returncode == 0, chat.stderr
        assert chat.stdout.strip() and "saved as" in chat.stderr
        assert all(h.get("authorization") == f"Bearer {KEY}" for _, path, h in proxy.requests
                   if path.endswith("/chat/completions"))
        history = cli(["history", "list"], env)
        doc_id = history.stdout.split()[0]
        for fmt in ("ocm", "json", "md"):
            out = tmp_path / "exports" / f"chat.{fmt}"
            out.parent.mkdir(exist_ok=True)
            assert cli(["history", "export", doc_id, "--format", fmt, str(out)], env).returncode == 0
        offline = cli(["chat", "--endpoint", "lab", "--offline", "--prompt", "hi"], env)
        assert offline.returncode == 2 and "never uses a remote endpoint" in offline.stderr
        outputs = [r.stdout + r.stderr for r in (add, listed, untested, stored, tested, chat, history, offline)]
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert any(p.name == "history.db" for p in files) and any(p.name == "settings.json" for p in files)
        leaks = [str(p) for p in files if KEY.encode() in p.read_bytes()]
        assert leaks == [] and not any(KEY in text for text in outputs)
        assert cli(["keys", "delete", "lab-key"], env).returncode == 0
        assert Secrets(secret_service_backend()).get("lab-key") is None
    finally:
        proxy.close()
        server.terminate()
        server.wait(timeout=30)
        if server.stderr:
            server.stderr.close()


def test_the_window_adds_an_endpoint_keeps_its_key_in_the_keyring_and_chats_with_it(
    qtbot: Any, qloop: Any, secret_service: dict[str, str], tmp_path: Path, gemma_model: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.controllers.remote_host import RemoteHost
    from app.store.history import HistoryStore
    from app.ui.window.endpoints import EndpointDialog
    from app.ui.window.main_window import MainWindow, UiState
    from tests.engine.test_remote import start_server
    from tests.fault_proxy import FaultProxy
    from tests.gui_helpers import all_text
    from tests.ui.test_window import send

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    port, server = start_server(gemma_model)
    proxy = FaultProxy(port)
    remote = RemoteHost(Secrets(secret_service_backend()))
    window = MainWindow(
        ChatController(ModelHost(EngineBridge()), HistoryStore(tmp_path / "history.db"), remote),
        UiState(tmp_path / "ui-state.json"),
    )
    qtbot.addWidget(window)
    window.show()
    try:
        window.controller.settle()
        assert window.picker is not None and window.picker.currentText() == "This computer"
        dialog = EndpointDialog(remote, window)
        qtbot.addWidget(dialog)
        for field, text in ((dialog.name, "lab"), (dialog.base_url, proxy.url), (dialog.model, "gemma"),
                            (dialog.key_name, "lab-key"), (dialog.key, KEY)):
            field.setText(text)
        with qtbot.waitSignal(remote.tested, timeout=30_000) as tested:
            dialog.test_button.click()
        assert tested.args[0] and "its models: gemma" in tested.args[1]
        with qtbot.waitSignal(remote.saved, timeout=30_000):
            dialog._save()
        assert dialog.key.text() == "" and Secrets(secret_service_backend()).get("lab-key") == KEY
        qtbot.waitUntil(lambda: window.picker is not None and window.picker.count() == 2)
        window.picker.setCurrentIndex(1)
        window.picker.activated.emit(1)
        window.controller.settle()
        assert window.controller.doc.endpoint == "lab"
        window.controller.max_tokens = 8
        # the model list passes (the endpoint's context, asked on first use), then the endpoint
        # is busy: the window says it waits
        proxy.faults = ["", "429"]
        with qtbot.waitSignal(window.controller.notice, timeout=30_000) as waited:
            send(qtbot, window, "The capital of France is", timeout=60_000)
        assert "rate limiting (429); waiting 1 s" in waited.args[0]
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None and reply.state in ("done", "incomplete") and reply.segments[0].text
        window.controller.settle()
        assert window.sidebar.list.item(1).text().startswith("☁ ")  # this chat sends data out (0: "Today")
        assert window.status_context.text().startswith("☁ lab: ")  # what the endpoint reported
        sent = next(e for e in reply.debug.events if e.startswith("request to lab: "))
        assert '"model": "gemma"' in sent and "The capital of France is" in sent and KEY not in sent
        chats = [h for _, path, h in proxy.requests if path.endswith("/chat/completions")]
        assert chats and all(h.get("authorization") == f"Bearer {KEY}" for h in chats)
        window.controller.set_offline(True)  # offline: nothing more leaves the computer
        send(qtbot, window, "And of Italy?", timeout=60_000)
        refused = window.controller.doc.turns[-1].version.reply
        assert refused is not None and refused.state == "failed" and "offline" in refused.error
        assert len([r for r in proxy.requests if r[1].endswith("/chat/completions")]) == len(chats)
        window.controller.saved()
        window.set_debug(True)  # the debug pane shows the request, never the key
        window.transcript.turnSelected.emit(0)
        qtbot.waitUntil(lambda: "request to lab" in window.debug.events.toPlainText())
        assert KEY not in all_text(window)
        leaks = [str(p) for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
        assert leaks == []
    finally:
        window.close()
        proxy.close()
        server.terminate()
        server.wait(timeout=30)
        if server.stderr:
            server.stderr.close()
