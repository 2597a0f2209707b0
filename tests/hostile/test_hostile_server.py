"""The local server against hostile clients: cross-site posts, slow and idle connections, lone
surrogates, wrong types, deep nesting, forged log lines — each refused with a 4xx that says why,
never a 500, and nothing of it reaches the model. Most run in-process on loopback, on a scripted
token source; the worker's survival is checked once on the real bundled model (SmolLM2)."""

from __future__ import annotations

import concurrent.futures as cf
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.server.guard import origin_allowed
from app.server.listen import server_config
from app.server.options import ServeOptions
from app.server.served import ServedModel
from app.templates.registry import get_template
from tests.server.in_process import scripted_server
from tests.server.test_server import _free_port, _serve

ASK = [{"role": "user", "content": "Hi"}]
JSON = {"content-type": "application/json"}


def _post(base: str, path: str, body: Any, **headers: str) -> httpx.Response:
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    return httpx.post(f"{base}{path}", content=raw, headers={**JSON, **headers}, timeout=30)


def _refused(answer: httpx.Response, status: int, param: str | None = None) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["message"] and (param is None or error["param"] == param), error
    return error


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[str, ScriptedClient]]:
    """A server on a scripted source (every generation ends at once), with short deadlines."""
    client = ScriptedClient([])
    options = ServeOptions(port=_free_port(), head_timeout_s=1.0, body_timeout_s=1.0, max_tokens=16)
    with scripted_server(client, options) as base:
        yield base, client


def test_v26_a_cross_origin_page_cannot_post_blind(scripted: tuple[str, ScriptedClient]) -> None:
    base, _ = scripted
    body = json.dumps({"messages": ASK})
    csrf = httpx.post(f"{base}/v1/chat/completions", content=body, timeout=30,
                      headers={"content-type": "text/plain", "origin": "http://evil.example"})
    assert _refused(csrf, 403)["code"] == "origin_not_allowed"
    assert _refused(_post(base, "/v1/chat/completions", body, origin="http://evil.example"), 403)
    assert _refused(httpx.get(f"{base}/v1/models", headers={"origin": "null"}), 403)
    plain = httpx.post(f"{base}/v1/chat/completions", content=body, headers={"content-type": "text/plain"})
    assert _refused(plain, 415)["code"] == "unsupported_media_type"  # no Origin: still JSON only
    assert _refused(httpx.post(f"{base}/v1/completions", data={"prompt": "x"}), 415)  # a form post
    own = _post(base, "/v1/chat/completions", body, origin=base)
    assert own.status_code == 200, own.text  # a page of the server's own origin
    assert _post(base, "/v1/chat/completions", body).status_code == 200  # a client with no Origin
    host = base.removeprefix("http://")
    assert origin_allowed("https://app.example", host, "http", ("https://app.example",))
    assert not origin_allowed("http://127.0.0.1:1", host, "http", ())
    assert not origin_allowed("http://[::1", host, "http", ())


def test_v31_v32_slow_and_idle_connections_are_closed(scripted: tuple[str, ScriptedClient]) -> None:
    base, _ = scripted
    port = int(base.rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(15)]
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(15)]
    for s in slow:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
    body = socket.create_connection(("127.0.0.1", port))
    body.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mess")
    try:
        for s in [*idle, *slow, body]:
            s.settimeout(5)
        assert all(s.recv(1024) == b"" for s in [*idle, *slow])  # closed by the server, in time
        assert body.recv(1024).startswith(b"HTTP/1.1 408")
        assert httpx.get(f"{base}/v1/models").status_code == 200  # and still serving
    finally:
        for s in [*idle, *slow, body]:
            s.close()
    unused = ServedModel(name="x", engine=cf.ThreadPoolExecutor(1), session=ChatSession,  # type: ignore[arg-type]
                         template=get_template("harmony"), n_ctx=1)
    config = server_config(unused, ServeOptions(max_connections=7, idle_timeout_s=3))
    assert (config.limit_concurrency, config.timeout_keep_alive, config.h11_max_incomplete_event_size) == (7, 3, 16384)


def test_v4_a_lone_surrogate_is_refused_before_the_model(scripted: tuple[str, ScriptedClient]) -> None:
    base, client = scripted
    asked = len(client.prompts)
    chat = _post(base, "/v1/chat/completions", '{"messages": [{"role": "user", "content": "a\\ud800b"}]}')
    assert _refused(chat, 400, "messages.0.content")["code"] == "invalid_text"
    _refused(_post(base, "/v1/completions", '{"prompt": ["ok", "\\udfff"]}'), 400, "prompt.1")
    _refused(_post(base, "/v1/responses", '{"input": "x", "instructions": "\\ud83d"}'), 400, "instructions")
    _refused(_post(base, "/v1/chat/completions", '{"messages": [], "\\ud800": 1}'), 400)
    _refused(_post(base, "/v1/chat/completions", b'{"messages": "\xed\xa0\x80"}'), 400)  # raw, not UTF-8
    assert len(client.prompts) == asked  # none of it reached the model


def test_v9_responses_content_of_the_wrong_type(scripted: tuple[str, ScriptedClient]) -> None:
    base, _ = scripted
    for item, param in [({"role": "user", "content": 5}, "input.0.content"),
                        ({"role": "user", "content": True}, "input.0.content"),
                        ({"type": "function_call_output", "call_id": "c", "output": 1.5}, "input.0.output"),
                        ({"type": "function_call_output", "call_id": "c", "output": False}, "input.0.output"),
                        ({"type": "reasoning", "summary": 3}, "input.0.summary")]:
        _refused(_post(base, "/v1/responses", {"input": [item]}), 400, param)


def _nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


def test_v13_v14_deep_nesting_is_refused_before_parsing(scripted: tuple[str, ScriptedClient]) -> None:
    base, _ = scripted
    deep = '{"messages": ' + "[" * 1000 + "]" * 1000 + "}"
    for path in ("/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings"):
        assert _refused(_post(base, path, deep), 400)["code"] == "nested_too_deep"
    strings = '{"prompt": "' + "[" * 5000 + '", "max_tokens": 1}'  # brackets in text do not count
    assert _post(base, "/v1/completions", strings).status_code == 200
    def form(levels: int) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": "x", "schema": _nested_schema(levels)}}
    assert _refused(_post(base, "/v1/chat/completions", {"messages": ASK, "response_format": form(240)}), 400)
    _refused(_post(base, "/v1/chat/completions", {"messages": ASK, "response_format": form(20)}), 400,
             "response_format.json_schema.schema")
    _refused(_post(base, "/v1/responses", {"input": "x", "text": {"format": {
        "type": "json_schema", "name": "x", "schema": _nested_schema(20)}}}), 400, "text.format.schema")
    tool = {"type": "function", "function": {"name": "f", "parameters": _nested_schema(20)}}
    _refused(_post(base, "/v1/chat/completions", {"messages": ASK, "tools": [tool]}), 400,
             "tools.0.function.parameters")
    fine = _post(base, "/v1/chat/completions", {"messages": ASK, "response_format": form(10)})
    assert fine.status_code == 200, fine.text  # a schema within the bound is served


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_v29_a_url_cannot_forge_a_log_line(scripted: tuple[str, ScriptedClient]) -> None:
    base, _ = scripted
    logger, kept = logging.getLogger("server"), _Kept()
    level, disabled = logger.level, logger.disabled
    logger.setLevel(logging.INFO)  # as `serve` sets it
    logger.disabled = False
    logger.addHandler(kept)
    try:
        httpx.get(f"{base}/v1/models%0A2026-01-01 INFO GET /admin 200%1B[31m")
        deadline = time.monotonic() + 5
        while not kept.lines and time.monotonic() < deadline:
            time.sleep(0.02)  # the line is written once the answer has gone
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
        logger.disabled = disabled
    assert kept.lines and not any("\n" in s or "\x1b" in s for s in kept.lines)
    assert any("\\x0a2026-01-01" in s and "\\x1b[31m" in s for s in kept.lines)


# The fuzz: valid bodies with a field replaced by anything JSON can say, and JSON at random.
_SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() \
    | st.text(max_size=8) | st.sampled_from(["\ud800", "a\udfffb", "", "0", "user", "function"])
_VALUES = _SCALARS | st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["type", "text", "role", "content", "name", "x"]), inner, max_size=3), max_leaves=8)
_BASES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
                             "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
                             "tool_choice": "auto", "response_format": {"type": "text"}, "stop": ["x"]},
    "/v1/completions": {"prompt": "Hi", "max_tokens": 4, "stop": "x", "echo": False},
    "/v1/responses": {"input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
                                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                                {"type": "function_call_output", "call_id": "c", "output": "1"}],
                      "tools": [{"type": "function", "name": "f", "parameters": {}}],
                      "text": {"format": {"type": "json_object"}}, "reasoning": {"effort": "low"},
                      "max_output_tokens": 4},
    "/v1/embeddings": {"input": "Hi"},
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found += _paths(child, (*prefix, key))
    return found


@st.composite
def _bodies(draw: st.DrawFn) -> tuple[str, Any]:
    path = draw(st.sampled_from(sorted(_BASES)))
    body = json.loads(json.dumps(_BASES[path]))
    if draw(st.integers(0, 9)) == 0:
        return path, draw(_VALUES)
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(_paths(body)))
        if not where:
            continue
        parent = body
        for key in where[:-1]:
            parent = parent[key]
        parent[where[-1]] = draw(_VALUES)
    if draw(st.booleans()):
        body["stream"] = True
    return path, body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(asked=_bodies())
def test_fuzzed_bodies_are_never_a_500(scripted: tuple[str, ScriptedClient], asked: tuple[str, Any]) -> None:
    base, _ = scripted
    path, body = asked
    answer = _post(base, path, json.dumps(body))  # NaN and Infinity as Python writes them, too
    assert answer.status_code < 500, (answer.status_code, answer.text)
    if answer.status_code >= 400:
        assert answer.json()["error"]["message"]


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def test_the_real_worker_survives_hostile_text(tmp_path: Path) -> None:
    serving = _serve("default", tmp_path, "--max-tokens", "8")
    try:
        base = next(serving)
        port = base.rsplit(":", 1)[1]
        serve = next(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                     and f"--port\x00{port}\x00".encode() in _read(p / "cmdline"))
        workers = _children(serve)
        assert workers  # the model's worker process
        for raw in ('{"messages": [{"role": "user", "content": "a\\ud800b"}]}',
                    '{"messages": [{"role": "system", "content": "\\udc00"}, {"role": "user", "content": "x"}]}',
                    '{"prompt": "\\ud83d", "max_tokens": 2}', '{"input": [{"role": "user", "content": "\\udfff"}]}'):
            for path in ("/v1/chat/completions", "/v1/completions", "/v1/responses"):
                assert _post(base, path, raw).status_code == 400
        odd = _post(base, "/v1/chat/completions", {"messages": [{"role": "user", "content": "\x00\x1b\u202e\ufffe😀"}],
                                                    "max_tokens": 2})
        assert odd.status_code == 200, odd.text
        assert _children(serve) == workers  # the same worker: it never died nor reloaded
    finally:
        serving.close()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_a_lone_surrogate_that_reaches_the_worker_another_way_does_not_kill_it(smollm_client: Any) -> None:
    """The window and the terminal do not pass through the HTTP check: the worker itself reads
    such text as a replacement character and stays up."""
    before = smollm_client.pid
    ids = smollm_client.tokenize("a\ud800b", special=False)
    assert ids and smollm_client.pid == before
    assert smollm_client.tokenize("ab", special=False)  # still answering
