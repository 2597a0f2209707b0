"""Shared fixtures: our encoding, renderer, and openai-harmony as the oracle.

openai-harmony reads the o200k vocabulary from the folder named by
TIKTOKEN_ENCODINGS_BASE; we point it at the bundled `resources/` so nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from app.harmony.encoding import HarmonyEncoding, load_encoding
from app.harmony.renderer import Renderer
from app.resources import resources_dir
from tests.gui_helpers import qloop  # noqa: F401 (the window tests' asyncio loop)
from tests.session_dirs import APP_CACHE, GEMMA_LOCK, MODELS, ROOT, RUN_ENV, Session, locked

os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(resources_dir())
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # Qt tests need no display

# The app's folders go to the tests' own, never the user's (see tests/session_dirs.py). The main
# pytest process starts the session; its xdist workers ("gw0", "gw1", ...), started after this ran,
# inherit RUN_ENV. The built models and the app's cache are shared; config and data (settings,
# history) are each process's own.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
SESSION = Session() if WORKER is None or not os.environ.get(RUN_ENV) else None
if SESSION is not None:
    os.environ[RUN_ENV] = str(SESSION.run)
RUN = Path(os.environ[RUN_ENV])
os.environ["HARMONY_DESK_CONFIG"] = str(RUN / (WORKER or "main") / "config")
os.environ["HARMONY_DESK_DATA"] = str(RUN / (WORKER or "main") / "data")
os.environ.setdefault("HARMONY_DESK_CACHE", str(ROOT / APP_CACHE))
os.environ.setdefault("HARMONY_DESK_TEST_CACHE", str(ROOT / MODELS))  # tests/tiny_*.py


def pytest_unconfigure(config: pytest.Config) -> None:
    """The main process, once its workers ended: the session's folder goes, and if no other
    session is running, the shared ones too, all but the compiled python runtime."""
    if SESSION is not None and not hasattr(config, "workerinput"):
        SESSION.finish()


# With xdist the longest files go first, so that the two workers end together; xdist's own order
# (the files with the most tests first, `--no-loadscope-reorder` in pyproject.toml turns it off)
# sent the bundle's build, one test of about 2 minutes, last. Each file's tests keep their order.
LONGEST_FIRST = ("test_bundle.py", "test_json_mode.py", "test_sandbox.py", "test_kv_reuse.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if WORKER is not None:
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest as found


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A reviewer's note, never a failure: the modules grown past the size to split at."""
    from tests.architecture.test_architecture import SIZE_NOTE, long_modules

    long = long_modules()
    if long:
        terminalreporter.section(f"modules over {SIZE_NOTE} lines (split by concern when it grows)")
        for name, lines in long.items():
            terminalreporter.write_line(f"{name}: {lines}")


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

    with locked(ROOT / GEMMA_LOCK):  # two processes assembling it at once share one .partial
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
