"""`harmony-desk connect` describes a running server as it runs: against a real `serve` on the
bundled SmolLM2 started with `--rope-scale 2 --ctx 12288` (a context no estimate from the file
gives: trained 8,192), Codex's and aider's files get that context and the model the server
names first; `--ctx` wins over what the server says; a model the server has not loaded, or a
server that lists no context (llama-server's shape), gets the estimate as before; a `--ctx`
that is not a size is refused (exit 2) before anything is written. `pick` is checked on the
listings themselves: only a loaded chat model with a positive whole context counts."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.clients.served import Listed, pick
from tests.cli.test_connect import app, client_env, connect, default_model_name
from tests.server.test_rope_scale import Served, _serving

SERVED_CONTEXT = 12288


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return client_env(tmp_path)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("connect-served")
    yield from _serving(tmp, "--rope-scale", "2", "--ctx", str(SERVED_CONTEXT))


def codex_config(env: dict[str, str]) -> dict[str, Any]:
    return tomllib.loads((Path(env["HOME"]) / ".codex" / "config.toml").read_text())


def test_connect_takes_the_running_servers_model_and_context(server: Served, env: dict[str, str]) -> None:
    done = connect("codex", env, "--base-url", server.base)
    config = codex_config(env)
    assert config["model_context_window"] == SERVED_CONTEXT
    assert config["model"] == default_model_name()
    assert f"context {SERVED_CONTEXT:,} tokens, as the server at {server.base} serves it now" in done.stdout
    connect("aider", env, "--base-url", f"{server.base}/v1")
    metadata = json.loads((Path(env["HOME"]) / ".aider.model.metadata.json").read_text())
    [entry] = metadata.values()
    assert entry["max_input_tokens"] == SERVED_CONTEXT


def test_ctx_wins_over_what_the_server_says(server: Served, env: dict[str, str]) -> None:
    done = connect("codex", env, "--base-url", server.base, "--ctx", "6000")
    assert codex_config(env)["model_context_window"] == 6000
    assert "as given with --ctx" in done.stdout


def test_a_model_the_server_has_not_loaded_gets_the_estimate(server: Served, env: dict[str, str]) -> None:
    done = connect("codex", env, "--base-url", server.base, "--model", "not-loaded-here")
    config = codex_config(env)
    assert (config["model"], config["model_context_window"]) == ("not-loaded-here", 4096)
    assert "assumed" in done.stdout


@pytest.mark.parametrize("given", ["10", "many", "-4096"])
def test_a_ctx_that_is_not_a_size_is_refused_and_nothing_is_written(env: dict[str, str], given: str) -> None:
    done = app(["connect", "codex", f"--ctx={given}"], env)
    assert done.returncode == 2 and "--ctx" in done.stderr
    assert not (Path(env["HOME"]) / ".codex").exists()


OURS = {"data": [
    {"id": "big", "object": "model", "status": {"value": "loaded"},
     "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]}, "n_ctx": 32768},
    {"id": "embedder", "object": "model", "status": {"value": "loaded"},
     "architecture": {"output_modalities": ["embeddings"]}, "n_ctx": 512},
    {"id": "later", "object": "model", "status": {"value": "unloaded"}},
]}  # fmt: skip
LLAMA_SERVER = {"object": "list", "data": [
    {"id": "SmolLM2.gguf", "object": "model", "meta": {"n_ctx_train": 8192, "n_vocab": 49152}},
]}  # fmt: skip


def test_pick_takes_only_a_loaded_chat_model_with_its_context() -> None:
    assert pick(OURS, None) == Listed("big", 32768)
    assert pick(OURS, "big") == Listed("big", 32768)
    assert pick(OURS, "embedder") is None  # answers /v1/embeddings only
    assert pick(OURS, "later") is None  # not loaded: its context is not known yet
    assert pick(LLAMA_SERVER, None) is None  # a trained size is not what the server gives
    for odd in (None, [], {"data": "x"}, {"data": [{"id": "m", "n_ctx": True}]},
                {"data": [{"id": "m", "n_ctx": 0}]}, {"data": [{"id": 3, "n_ctx": 4096}]}):  # fmt: skip
        assert pick(odd, None) is None
