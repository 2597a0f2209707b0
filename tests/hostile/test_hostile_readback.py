"""The app's own files read back (settings, model choices, caches, lists, sidecars, markers):
whatever is found in their place — cut short, a length or a number past any bound, nested deep,
not UTF-8, too large, a FIFO, a device, a folder, a symbolic link — is never a crash and never
a hang: the reader gives "none", the file is set aside next to itself (`NAME.unusable-…`) and
is never read again, and each reader keeps its default. From the security review: a deep
`settings.json`, `models.json` or `library-scan.json` crashed `chat` and `models list`, and a
FIFO as `settings.json` hung `chat`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import InvalidInputError
from app.inputs import MAX_DEPTH, load_json
from app.readback import ASIDE, read_back, read_json, set_aside

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4096
HANG_S = 10.0


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _made(folder: Path, kind: str, body: str) -> Path:
    """`folder/state.json` as `kind`: a regular file holding `body`, or something else."""
    path = folder / "state.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link to a file":
        (folder / "real.json").write_bytes(body.encode("utf-8", "surrogatepass"))
        path.symlink_to(folder / "real.json")
    elif kind == "link to a device":
        path.symlink_to("/dev/zero")
    elif kind == "dangling link":
        path.symlink_to(folder / "nowhere.json")
    else:
        path.write_bytes(body.encode("utf-8", "surrogatepass") if kind == "file" else body.encode())
    return path


def _within(seconds: float, work: Callable[[], Any]) -> Any:
    """`work()`, failed when it runs past `seconds` (a hang) or raises."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # handed to the test, which fails on it
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"it hung for {seconds} s"
    assert not errors, errors
    return out[0]


BODIES = st.one_of(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    ).map(json.dumps),
    st.integers(150, 60_000).map(_deep),  # nested past the bound (or past Python's recursion)
    st.integers(10**30, 10**400).map(lambda n: json.dumps({"n_tokens": n, "state_bytes": -n})),
    st.text(max_size=200),  # anything, cut short or not JSON at all
    st.integers(LIMIT + 1, 3 * LIMIT).map(lambda n: json.dumps("x" * n)),  # larger than the limit
)
KINDS = st.sampled_from(
    ["file", "fifo", "folder", "link to a file", "link to a device", "dangling link"]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kind=KINDS, body=BODIES, cut=st.integers(0, 100))
def test_whatever_is_read_back_is_a_value_or_set_aside(
    tmp_path_factory: pytest.TempPathFactory, kind: str, body: str, cut: int
) -> None:
    folder = tmp_path_factory.mktemp("readback")
    body = body[: max(1, len(body) * cut // 100)] if cut < 50 else body  # half the time cut short
    path = _made(folder, kind, body)
    value = _within(HANG_S, lambda: read_back(path, LIMIT))
    aside = [p for p in folder.iterdir() if ASIDE in p.name]
    expected = _usable(kind, body)
    if expected is not None:
        assert value == expected[0] and path.exists() and not aside
    else:
        assert (
            value is None and not os.path.lexists(path) and len(aside) == 1
        )  # kept, never read again
        assert _within(HANG_S, lambda: read_back(path, LIMIT)) is None  # now simply missing


def _usable(kind: str, body: str) -> tuple[Any] | None:
    """(the value) when `body` as `kind` is a file the app could have written, else None."""
    if kind != "file":
        return None
    raw = body.encode("utf-8", "surrogatepass")
    if len(raw) > LIMIT:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, here = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, here)
            stack += [(v, here + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return (load_json(raw),) if deepest < MAX_DEPTH else None  # (lone surrogates: U+FFFD)


def test_a_missing_file_is_none_and_nothing_is_said_or_moved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert read_back(tmp_path / "absent.json") is None
    assert list(tmp_path.iterdir()) == [] and not caplog.records


def test_setting_aside_never_overwrites_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = []
    for _ in range(3):
        (tmp_path / "a.json").write_text("{")
        moved = set_aside(tmp_path / "a.json", "a test")
        assert moved is not None
        names.append(moved.name)
    assert len(set(names)) == 3 and all(n.startswith("a.json" + ASIDE) for n in names)
    assert "a test" in caplog.text and "set aside as" in caplog.text


def test_a_bundled_file_is_read_bounded_and_never_moved(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(_deep(5000))
    with pytest.raises(InvalidInputError, match="nested deeper"):
        read_json(path)
    assert path.exists()
    os.mkfifo(tmp_path / "fifo.json")

    def refused() -> str:
        with pytest.raises(InvalidInputError) as error:
            read_json(tmp_path / "fifo.json")
        return error.value.message

    assert "not a regular file" in _within(HANG_S, refused)


# --- every reader of the app's own files --------------------------------------------------------


def _readers(home: Path) -> dict[str, tuple[Path, Callable[[], Any], Any]]:
    """name → (its file, reading it, what it gives when there is none)."""
    from app.controllers.model_host import RecentModels
    from app.controllers.ui_state import UiState
    from app.library import bundled, queue
    from app.library.scan import ScanCache
    from app.settings import Settings, load_settings
    from app.templates.choices import ChoiceStore, ModelChoice
    from app.tools.approval import ApprovalStore
    from app.tools.trust import TrustStore

    models = home / "models"
    models.mkdir(exist_ok=True)
    (models / "x.gguf").write_bytes(b"GGUF")
    return {
        "settings.json": (home / "settings.json", lambda: load_settings(home / "settings.json"), Settings()),
        "models.json": (home / "models.json", lambda: ChoiceStore(home / "models.json").get("m.gguf"), ModelChoice()),
        "library-scan.json": (home / "scan.json", lambda: ScanCache(home / "scan.json")._data, {}),
        "ui-state.json": (home / "ui.json", lambda: UiState(home / "ui.json").get("k", "default"), "default"),
        "recent-models.json": (home / "recent.json", lambda: RecentModels(home / "recent.json").load(), []),
        "plugin-trust.json": (home / "trust.json", lambda: TrustStore(home / "trust.json").load(), {}),
        "tool-approvals.json": (home / "approvals.json", lambda: ApprovalStore(home / "approvals.json").load(), {}),
        "a download's sidecar": (models / "x.gguf.partial.json", lambda: queue.paused_downloads([models]), []),
        "a .verified mark": (home / "x.verified",
                             lambda: bundled._verified(models / "x.gguf", "0" * 64, home / "x.verified"), False),
    }  # fmt: skip


READERS = [
    "settings.json",
    "models.json",
    "library-scan.json",
    "ui-state.json",
    "recent-models.json",
    "plugin-trust.json",
    "tool-approvals.json",
    "a download's sidecar",
    "a .verified mark",
]
HOSTILE = ["nested deep", "a FIFO", "cut short", "not UTF-8", "a link"]


@pytest.mark.parametrize("how", HOSTILE)
@pytest.mark.parametrize("reader", READERS)
def test_each_reader_keeps_its_default_and_sets_the_file_aside(
    tmp_path: Path, reader: str, how: str
) -> None:
    path, read, default = _readers(tmp_path)[reader]
    if how == "nested deep":
        path.write_text(_deep(100_000))
    elif how == "a FIFO":
        os.mkfifo(path)
    elif how == "cut short":
        path.write_text('{"entries": {"a": [1, 2')
    elif how == "not UTF-8":
        path.write_bytes(b'{"a": "\xff\xfe"}')
    else:
        (tmp_path / "elsewhere.json").write_text("{}")
        path.symlink_to(tmp_path / "elsewhere.json")
    assert _within(HANG_S, read) == default
    assert not os.path.lexists(path)
    assert [p for p in path.parent.iterdir() if p.name.startswith(path.name + ASIDE)]


def _cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(home / "config"), "HARMONY_DESK_DATA": str(home / "data"),
           "HARMONY_DESK_CACHE": str(home / "cache")}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)  # fmt: skip


def test_models_list_and_chat_survive_deep_files_and_a_fifo_settings(tmp_path: Path) -> None:
    """The review's findings, end to end: each command answers, and each file is set aside."""
    config, cache = tmp_path / "config", tmp_path / "cache"
    config.mkdir()
    cache.mkdir()
    (config / "settings.json").write_text(_deep(100_000))
    (cache / "library-scan.json").write_text(_deep(100_000))
    listed = _cli(tmp_path, "models", "list")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr[-3000:]
    os.mkfifo(config / "settings.json")  # a FIFO opened for reading waits for a writer
    (config / "models.json").write_text(_deep(100_000))
    chat = _cli(tmp_path, "chat", "--model", "default", "--threads", "1", "--max-tokens", "2",
                "--temperature", "0", "--prompt", "Hi", timeout=240)  # fmt: skip
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr[-3000:]
    for made, times in (
        (config / "settings.json", 2),
        (cache / "library-scan.json", 1),
        (config / "models.json", 1),
    ):
        assert len(list(made.parent.glob(made.name + ASIDE + "*"))) == times, made
        assert not made.exists() or isinstance(json.loads(made.read_text()), dict)  # written anew
