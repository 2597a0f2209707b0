"""Secrets and files: a URL carrying credentials is refused and never stored or printed; a
server's error text is redacted before anyone sees it; the history is the user's only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.domain.endpoint import Endpoint
from app.domain.redact import redact
from app.engine.remote.retry import RemoteError
from app.store.database import open_database

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("url", ["https://bob:hunter2@example.com/v1", "https://token@example.com/v1",
                                 "https://example.com/v1?api_key=sk-abc", "https://example.com/v1?x=1&access_token=t",
                                 "https://example.com/v1?sig=abc"])
def test_an_endpoint_url_with_credentials_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="keyring") as refused:
        Endpoint(name="e", base_url=url, model="m")
    assert "hunter2" not in str(refused.value.errors()[0]["msg"])


def test_the_command_line_refuses_and_never_echoes_or_stores_the_secret(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-m", "app", "endpoints", "add", "leaky", "--base-url",
         "https://bob:hunter2@example.com/v1", "--model", "m"],
        env=env, capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert done.returncode != 0 and "keyring" in done.stderr
    assert "hunter2" not in done.stdout + done.stderr
    stored = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert "hunter2" not in stored


def test_server_error_text_is_redacted() -> None:
    error = RemoteError("db refused (401): invalid key XYZ-SECRET-42 for https://u:pw@h/?token=abc",
                        known=("XYZ-SECRET-42",))
    assert "XYZ-SECRET-42" not in error.message and ":pw@" not in error.message and "abc" not in error.message
    assert "abcdefghijklmnop" not in redact("Authorization: Bearer abcdefghijklmnop")


def test_the_data_folder_and_history_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("HARMONY_DESK_DATA", str(data))
    opened = open_database()
    opened.connection.execute("CREATE TABLE IF NOT EXISTS t(x)")
    opened.connection.close()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "history.db").stat().st_mode) == 0o600


def test_a_keyring_whose_service_has_gone_keeps_keys_in_memory_and_says_why() -> None:
    """A backend chosen while a D-Bus session existed raises once it is gone; Secrets says so
    and keeps this run's keys in memory instead of failing."""
    from app.secrets import Secrets

    class Gone:
        @property
        def priority(self) -> float:
            raise RuntimeError("Unable to initialize SecretService: no session bus")

    secrets = Secrets(Gone())
    assert not secrets.saved and "no session bus" in (secrets.problem or "")
    secrets.set("lab-key", "sk-test")
    assert secrets.get("lab-key") == "sk-test"
