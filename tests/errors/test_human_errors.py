"""Errors a user meets speak in one human sentence; the technical facts travel as `details`.

A sentence shows no byte string, no exception class, no traceback and no `PATH`; the details
carry what a developer needs (the bytes, the full path, the server's stderr, llama.cpp's words).
"""

from __future__ import annotations

import re
import socket
import struct
import sys
from pathlib import Path
from typing import Any

import pytest

from app.engine.local.limits import load_error, stalled_error
from app.engine.local.process import death_reason
from app.engine.protocol import LoadFailed
from app.errors import HarmonyDeskError, LoadProblem, ModelLoadError
from app.gguf.info import read_gguf
from app.tools.mcp.client import McpConnection, McpError
from app.tools.mcp.config import McpServer

_CLASS = re.compile(r"\b[A-Z]\w*(Error|Exception|Exit|Interrupt)\b")


def assert_human(sentence: str) -> None:
    """One sentence a non-developer can read (see the module docstring)."""
    assert "b'" not in sentence and 'b"' not in sentence and "\\x" not in sentence, sentence
    assert not _CLASS.search(sentence), sentence
    assert "Traceback" not in sentence and 'File "' not in sentence, sentence
    assert ":/usr/" not in sentence and "/bin:" not in sentence, sentence  # no PATH run
    assert "\n" not in sentence and sentence.endswith("."), sentence
    assert sentence.count(". ") <= 1, sentence  # a sentence, not a report


def _error(path: Path) -> ModelLoadError:
    with pytest.raises(ModelLoadError) as raised:
        read_gguf(path)
    return raised.value


@pytest.mark.parametrize(
    "name, content, problem, words, raw",
    [
        ("x.zip", b"PK\x03\x04" + bytes(60), LoadProblem.NOT_GGUF, "it looks like a ZIP archive", "50 4B 03 04"),
        ("paper.pdf", b"%PDF-1.7\n" + b"x" * 60, LoadProblem.NOT_GGUF, "a PDF document", "25 50 44 46"),
        ("page.gguf", b"<!DOCTYPE html><html><head><title>Sign in</title>" + b" " * 30, LoadProblem.NOT_GGUF,
         "a web page", "3C 21 44 4F"),
        ("model.safetensors", struct.pack("<Q", 30) + b'{"__metadata__": {"format": "pt"}}' + bytes(100),
         LoadProblem.NOT_GGUF, "a safetensors file", "1E 00 00 00"),
        ("empty.gguf", b"", LoadProblem.NOT_GGUF, "the file is empty", ""),
        ("cut.gguf", b"GGUF\x03\x00\x00\x00\x01", LoadProblem.TRUNCATED, "the file is cut short", "47 47 55 46 03"),
        ("notes.gguf", b"These are my notes about models.\n" * 3, LoadProblem.NOT_GGUF, "a text file", "54 68 65 73"),
        ("lfs.gguf", b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 9\n", LoadProblem.NOT_GGUF,
         "Git LFS pointer", "76 65 72 73"),
        ("m.gguf.gz", b"\x1f\x8b\x08\x00" + bytes(60), LoadProblem.NOT_GGUF, "gzip", "1F 8B 08 00"),
        ("noise.gguf", bytes(range(200, 256)) * 2, LoadProblem.NOT_GGUF, "it is not a GGUF model file", "C8 C9 CA"),
        ("tiny.gguf", b"GG", LoadProblem.NOT_GGUF, "too short", "47 47"),
    ],
)
def test_a_file_that_is_not_a_gguf_model_is_named_in_words(
    tmp_path: Path, name: str, content: bytes, problem: LoadProblem, words: str, raw: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    error = _error(path)
    assert error.problem is problem and words in error.message
    assert error.message.startswith(f"Cannot load the model “{name}”:")
    assert_human(error.message)
    assert str(path) not in error.message and str(path) in error.details  # the full path: details
    assert raw in error.details  # the bytes, in hex, only in the details
    assert "GGUF" not in error.reason or "b'" not in error.reason  # the library's row says it too


def test_a_damaged_header_says_so_and_keeps_the_facts_for_the_details(tmp_path: Path) -> None:
    path = tmp_path / "huge-counts.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 10**9, 1) + bytes(64))
    error = _error(path)
    assert error.problem is LoadProblem.NOT_GGUF and "its header is damaged" in error.message
    assert_human(error.message)
    assert "1,000,000,000 tensors" in error.details
    old = tmp_path / "v1.gguf"
    old.write_bytes(b"GGUF" + struct.pack("<IQQ", 1, 0, 0) + bytes(16))
    assert "version 1, too old" in _error(old).message
    zero = tmp_path / "v0.gguf"
    zero.write_bytes(b"GGUF" + bytes(64))
    assert "its header is damaged" in _error(zero).message and "version 0" in _error(zero).details
    folder = tmp_path / "a-folder.gguf"
    folder.mkdir()
    assert "it is a folder, not a file" in _error(folder).message


def test_the_load_path_speaks_without_llama_cpp_s_words_in_the_sentence() -> None:
    vocabulary = load_error(LoadFailed(1, "vocabulary", "Failed to load model from file: /m/x.gguf"),
                            "/m/x.gguf", "frobnicator", ["llama_model_load: error loading model: unknown model architecture: 'frobnicator'"])
    assert vocabulary.problem is LoadProblem.UNSUPPORTED_ARCHITECTURE
    assert "“frobnicator”" in vocabulary.message and "Failed to load" not in vocabulary.message
    assert "Failed to load model from file" in vocabulary.details and "unknown model architecture" in vocabulary.details
    weights = load_error(LoadFailed(1, "weights", "ValueError: Failed to create llama_context"), "/m/x.gguf", "llama")
    assert weights.message == "Cannot load the model “x.gguf”: its weights are incomplete or damaged."
    assert "ValueError: Failed to create llama_context" in weights.details
    stalled = stalled_error("/m/x.gguf", 0.5, 120, cancelled=False)
    assert "no sign of progress for 120 s while reading its weights (50% read)" in stalled.message
    cancelled = stalled_error("/m/x.gguf", 0.5, 5, cancelled=True)
    assert cancelled.problem is LoadProblem.CANCELLED and cancelled.message.endswith("loading was cancelled.")
    for error in (vocabulary, weights, stalled, cancelled):
        assert_human(error.message)


def test_a_worker_that_dies_is_said_in_words() -> None:
    import signal

    assert "memory ran out" in death_reason(-signal.SIGKILL)
    assert "bad model file" in death_reason(-signal.SIGABRT)
    assert death_reason(1) == "the model worker exited unexpectedly (status 1)"


def test_every_error_may_carry_details_and_defaults_to_none() -> None:
    plain = HarmonyDeskError("Something went wrong.")
    assert plain.details == "" and plain.message == "Something went wrong."
    assert HarmonyDeskError("Said.", "the facts").details == "the facts"


# --- MCP servers that cannot start -----------------------------------------------------------------


def _start(server: McpServer, name: str = "git") -> McpError:
    with pytest.raises(McpError) as raised:
        McpConnection(name, server).start(timeout=20)
    return raised.value


def test_a_server_whose_command_is_missing_names_it_once_and_keeps_the_path_for_details() -> None:
    error = _start(McpServer(command="no-such-program-anywhere-42", args=("mcp-server-git",)))
    assert error.message == "The MCP server “git” could not start: the command “no-such-program-anywhere-42” was not found."
    assert_human(error.message)
    assert error.message.count("git") == 1
    assert "Looked in" in error.details and "folders of the PATH" in error.details


def test_a_server_that_exits_says_its_code_and_keeps_its_stderr_for_details() -> None:
    script = "import sys; sys.stderr.write('Traceback (most recent call last):\\nKeyError: config'); sys.exit(1)"
    error = _start(McpServer(command=sys.executable, args=("-c", script)), "broken")
    assert error.message == "The MCP server “broken” could not start: it exited with code 1 before answering."
    assert_human(error.message)
    assert "KeyError: config" in error.details and "Traceback" in error.details
    assert "harmony-desk mcp guard" not in error.details  # the guard's own line is never shown


def test_a_server_that_ends_quietly_and_a_remote_that_is_not_there() -> None:
    quiet = _start(McpServer(command=sys.executable, args=("-c", "print('hello')")), "quiet")
    assert quiet.message == "The MCP server “quiet” could not start: it ended before answering."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = _start(McpServer(url=f"http://127.0.0.1:{port}/mcp"), "web")
    assert remote.message == f"The MCP server “web” could not start: nothing answered at http://127.0.0.1:{port}/mcp."
    assert "ConnectError" in remote.details
    for error in (quiet, remote):
        assert_human(error.message)


def test_a_missing_secret_is_a_clause_with_the_fix_in_the_details() -> None:
    from app.secrets import Secrets

    class Empty(Secrets):
        def __init__(self) -> None:
            pass

        def get(self, name: str) -> str | None:
            return None

    with pytest.raises(McpError) as raised:
        McpConnection("envy", McpServer(command=sys.executable, secret_env=("API_TOKEN",)), Empty()).start(timeout=20)
    assert raised.value.message == (
        "The MCP server “envy” could not start: it needs the secret API_TOKEN, which is not in the keyring."
    )
    assert "Give API_TOKEN a value" in raised.value.details and "harmony-desk mcp add envy" in raised.value.details


def test_the_mcp_page_shows_a_start_failure_in_its_banner_with_the_stderr_behind_details(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.tools.mcp.config import save_servers
    from tests.ui.test_window import make_window

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    script = "import sys; sys.stderr.write('missing API key'); sys.exit(1)"
    save_servers({"broken": McpServer(command=sys.executable, args=("-c", script))})
    window, _ = make_window(qtbot, tmp_path, [])
    page = window.show_mcp()
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.servers.count() == 1, timeout=5000)
    page.test_button.click()
    qtbot.waitUntil(page.problem_banner.isVisible, timeout=30_000)
    assert page.problem_banner.text() == "The MCP server “broken” could not start: it exited with code 1 before answering."
    assert "missing API key" in page.problem_banner.details() and page.problem_banner.details_button.isVisible()
    assert page.status.text() == ""
    assert "missing API key" in page.log.toPlainText()  # the server's log keeps the details too
