"""A remote endpoint's context length: read from what its server lists (vLLM's `max_model_len`,
OpenRouter's `context_length`, LM Studio's, llama-server's `meta.n_ctx_train` with its `/props`),
asked once when the session first needs it, set per endpoint otherwise (`endpoints add
--context N`), said by `endpoints test`; against a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from keyring.backends import null

from app.cli.endpoints import add_endpoint_arguments, run_endpoints
from app.domain.attachments import ESTIMATED_CONTEXT, estimate
from app.domain.endpoint import Endpoint
from app.domain.events import ContextFit, GenerationDone
from app.domain.messages import Conversation, Message, Role
from app.engine.remote.context import Learned, stated
from app.engine.remote.session import RemoteSession, check_connection
from app.secrets import Secrets
from app.settings import load_settings
from tests.turns import send


class FakeServer:
    """An OpenAI-compatible server on loopback: `models` is its `/v1/models` list (None: 404),
    `props` its llama-server `/props` (None: 404); a chat completion streams "Fine."; every
    request's method and path is in `seen`."""

    def __init__(self, models: list[dict[str, Any]] | None, props: dict[str, Any] | None = None) -> None:
        self.models, self.props = models, props
        self.seen: list[tuple[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.seen.append(("GET", self.path))
                found = {"/v1/models": fake.models and {"object": "list", "data": fake.models},
                         "/props": fake.props}.get(self.path)
                self._json(200, found) if found is not None else self._json(404, {"error": {"message": "no"}})

            def do_POST(self) -> None:
                fake.seen.append(("POST", self.path))
                self.rfile.read(int(self.headers.get("content-length") or 0))
                chunks = [{"content": "Fine."}, {}]
                lines = b""
                for i, delta in enumerate(chunks):
                    choice = {"index": 0, "delta": delta, "finish_reason": "stop" if i else None}
                    event = {"id": "fake-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                             "choices": [choice]}
                    lines += b"data: " + json.dumps(event).encode() + b"\n\n"
                lines += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(lines)))
                self.end_headers()
                self.wfile.write(lines)

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serving() -> Iterator[list[FakeServer]]:
    servers: list[FakeServer] = []
    yield servers
    for server in servers:
        server.close()


def _fake(serving: list[FakeServer], models: list[dict[str, Any]] | None, props: dict[str, Any] | None = None
          ) -> FakeServer:
    serving.append(FakeServer(models, props))
    return serving[-1]


def _endpoint(url: str, **values: Any) -> Endpoint:
    return Endpoint(name="lab", base_url=url, model="m", **values)


@pytest.mark.parametrize(("entry", "learned"), [
    ({"id": "m", "max_model_len": 32768}, Learned(32768, "max_model_len")),  # vLLM
    ({"id": "m", "context_length": 200000, "top_provider": {"context_length": 128000}},
     Learned(200000, "context_length")),  # OpenRouter
    ({"id": "m", "top_provider": {"context_length": 128000}}, Learned(128000, "top_provider.context_length")),
    ({"id": "m", "max_context_length": 131072, "loaded_context_length": 8192},
     Learned(8192, "loaded_context_length")),  # LM Studio: what it loaded wins
    ({"id": "m", "meta": {"n_ctx_train": 131072}}, Learned(131072, "meta.n_ctx_train")),  # llama-server
    ({"id": "m", "n_ctx": 2048, "owned_by": "harmony-desk"}, Learned(2048, "n_ctx")),  # ours
    ({"id": "m", "context_window": 131072}, Learned(131072, "context_window")),  # Groq
    ({"id": "m", "owned_by": "ollama"}, None),
    ({"id": "m", "max_model_len": "big", "context_length": True}, None),  # not numbers
])
def test_each_servers_words_for_the_context(entry: dict[str, Any], learned: Learned | None) -> None:
    assert stated(entry) == learned


def _long() -> Conversation:
    said = "The river runs past the old mill and on to the sea. " * 20  # about 260 tokens each
    messages = [Message.of(Role.USER if n % 2 == 0 else Role.ASSISTANT, said) for n in range(10)]
    return Conversation(messages=tuple(messages))


def _fit(events: list[Any]) -> ContextFit:
    return next(e for e in events if isinstance(e, ContextFit))


def test_a_vllm_context_is_learned_once_on_first_use_and_fits_the_prompt(serving: list[FakeServer]) -> None:
    server = _fake(serving, [{"id": "other", "max_model_len": 99999}, {"id": "m", "max_model_len": 2048}])
    session = RemoteSession(_endpoint(server.url), None, max_tokens=64)
    assert server.seen == []  # nothing asked before the session is used
    first = list(send(session, "Hello", conversation=_long(), overflow="drop-middle"))
    fit = _fit(first)
    assert fit.budget.n_ctx == 2048 and fit.dropped and fit.budget.used + 64 <= 2048  # fitted to its 2,048
    assert isinstance(first[-1], GenerationDone) and session.learned == Learned(2048, "max_model_len")
    assert session.room("x" * 400) == 2048 - estimate("x" * 400) - 64  # the room: in the learned context
    list(send(session, "And then?", overflow="drop-middle"))
    assert server.seen.count(("GET", "/v1/models")) == 1  # asked once
    assert [p for m, p in server.seen if m == "POST"] == ["/v1/chat/completions"] * 2


def test_llama_servers_running_context_comes_from_its_props(serving: list[FakeServer]) -> None:
    entry = {"id": "model.gguf", "owned_by": "llamacpp", "meta": {"n_ctx_train": 131072}}
    server = _fake(serving, [entry], {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1})
    session = RemoteSession(_endpoint(server.url), None)  # one model served: its entry, whatever its id
    assert session.n_ctx == 4096 and session.learned == Learned(4096, "/props n_ctx")
    old = _fake(serving, [entry])  # no /props: what it was trained for
    assert RemoteSession(_endpoint(old.url), None).n_ctx == 131072


def test_a_context_set_on_the_endpoint_wins_and_nothing_is_asked(serving: list[FakeServer]) -> None:
    server = _fake(serving, [{"id": "m", "max_model_len": 2048}])
    session = RemoteSession(_endpoint(server.url, context=16384), None)
    events = list(send(session, "Hello"))
    assert _fit(events).budget.n_ctx == 16384 and session.n_ctx == 16384
    assert ("GET", "/v1/models") not in server.seen


def test_a_server_that_says_nothing_is_assumed_to_hold_8192(serving: list[FakeServer]) -> None:
    unlisted = _fake(serving, None)  # Databricks: no model list
    session = RemoteSession(_endpoint(unlisted.url), None)
    assert session.n_ctx == ESTIMATED_CONTEXT == 8192 and session.learned is None
    assert session.n_ctx == 8192 and unlisted.seen == [("GET", "/v1/models")]  # not asked again
    silent = _fake(serving, [{"id": "m", "owned_by": "ollama"}, {"id": "n"}])
    assert RemoteSession(_endpoint(silent.url), None).n_ctx == 8192
    gone = RemoteSession(_endpoint("http://127.0.0.1:9/v1", timeout_s=1), None)
    assert gone.n_ctx == 8192  # none answering: assumed, never raised


def test_the_test_says_the_context_and_where_it_comes_from(serving: list[FakeServer]) -> None:
    server = _fake(serving, [{"id": "m", "context_length": 32768}])
    ok, said = check_connection(_endpoint(server.url), None)
    assert ok and said.endswith("its models: m (m offered); context 32,768 tokens (its context_length)")
    ok, said = check_connection(_endpoint(server.url, context=8000), None)
    assert ok and "context 8,000 tokens (set for this endpoint; its server says 32,768 tokens" in said
    quiet = _fake(serving, [{"id": "m"}])
    ok, said = check_connection(_endpoint(quiet.url), None)
    assert ok and "8,192 tokens assumed" in said and "--context N" in said
    assert server.seen.count(("GET", "/v1/models")) == 2  # once a test: the list read once


def _cli(*words: str) -> int:
    parser = argparse.ArgumentParser()
    add_endpoint_arguments(parser)
    return run_endpoints(parser.parse_args(list(words)), Secrets(null.Keyring()))


def test_endpoints_add_context_is_kept_listed_and_tested(
    serving: list[FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    server = _fake(serving, [{"id": "m", "max_model_len": 4096}])
    assert _cli("add", "lab", "--base-url", server.url, "--model", "m", "--context", "32768") == 0
    kept = load_settings().endpoint("lab")
    assert kept is not None and kept.context == 32768
    assert _cli("list") == 0 and "context 32,768" in capsys.readouterr().out
    assert _cli("test", "lab") == 0
    assert "context 32,768 tokens (set for this endpoint; its server says 4,096 tokens" in capsys.readouterr().out


def test_a_context_out_of_range_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.errors import InvalidInputError

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    with pytest.raises(InvalidInputError, match="context"):
        _cli("add", "tiny", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--context", "10")
