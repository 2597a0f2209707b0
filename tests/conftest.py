"""Shared fixtures: our encoding, renderer, and openai-harmony as the oracle.

openai-harmony reads the o200k vocabulary from the folder named by
TIKTOKEN_ENCODINGS_BASE; we point it at the bundled `resources/` so nothing is downloaded.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from app.harmony.encoding import HarmonyEncoding, load_encoding
from app.harmony.renderer import Renderer
from app.resources import resources_dir
from tests.gui_helpers import qloop  # noqa: F401 (the window tests' asyncio loop)

os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(resources_dir())
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # Qt tests need no display
# The app's cache (the assembled default model) goes to a test folder, never the user's own.
os.environ["HARMONY_DESK_CONFIG"] = str(Path.home() / ".cache" / "harmony-desk-tests" / "config")
os.environ["HARMONY_DESK_DATA"] = tempfile.mkdtemp(prefix="harmony-desk-test-data-")
os.environ.setdefault(
    "HARMONY_DESK_CACHE", str(Path.home() / ".cache" / "harmony-desk-tests" / "app-cache")
)

# CI replays the same examples every run; a developer's run explores new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def encoding() -> HarmonyEncoding:
    return load_encoding()


@pytest.fixture(scope="session")
def renderer(encoding: HarmonyEncoding) -> Renderer:
    return Renderer(encoding)


@pytest.fixture(scope="session")
def oracle() -> Any:
    import openai_harmony as oh

    return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)


@pytest.fixture(scope="session")
def tiny_model() -> Any:
    """A tiny random-weight gpt-oss GGUF with the full o200k_harmony vocabulary (cached)."""
    from tests.tiny_gpt_oss import build

    return build()


@pytest.fixture(scope="module")
def tiny_client(tiny_model: Any) -> Any:
    """A worker with the tiny gpt-oss model loaded (one thread: see the README on threads)."""
    from app.engine.local.client import WorkerClient

    client = WorkerClient()
    client.load(tiny_model, n_ctx=1024, n_threads=1)
    yield client
    client.close()


@pytest.fixture(scope="session")
def gemma_model() -> Any:
    """Gemma 3 270M base (Q4_K_M), assembled from its packages."""
    from app.library.bundled import gemma_model_path

    return gemma_model_path()


@pytest.fixture(scope="session")
def smollm_model() -> Any:
    """The default chat model (SmolLM2-135M-Instruct, Q4_1), read from its package's data."""
    from app.library.bundled import default_model_path

    return default_model_path()


@pytest.fixture(scope="module")
def smollm_client(smollm_model: Any) -> Any:
    from app.engine.local.client import WorkerClient

    client = WorkerClient()
    client.load(smollm_model, n_ctx=2048, n_threads=1)
    yield client
    client.close()


@pytest.fixture(scope="module")
def gemma_client(gemma_model: Any) -> Any:
    from app.engine.local.client import WorkerClient

    client = WorkerClient()
    client.load(gemma_model, n_ctx=1024, n_threads=1)
    yield client
    client.close()
