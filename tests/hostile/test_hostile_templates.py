"""Hostile chat templates and template files: each probe of the adversarial review (T5–T9, T13,
T16) is refused with a template error, in under 2 s and under 200 MB over the idle process, and
leaves the app, the other templates and the model worker working; a GGUF carrying a hostile
template loads (llama-cpp-python never compiles it) and a load that stalls is stopped."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.domain.messages import Conversation, Message, Role
from app.errors import LoadProblem, ModelLoadError
from app.templates.files import TemplateFileError, read_spec
from app.templates.jinja_render import JinjaTemplateError, render

SECONDS = 2.0
MEGABYTES = 200
MESSAGES = [{"role": "user", "content": "hi"}]


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _refused(source: str, words: str) -> JinjaTemplateError:
    """The refusal of `source`, checked to come within the time and memory bounds."""
    render("warm {{ 1 }}", messages=MESSAGES)  # the helper running: the idle state
    before, start = _max_rss_mb(), time.monotonic()
    with pytest.raises(JinjaTemplateError, match=words) as refused:
        render(source, messages=MESSAGES, x=9, add_generation_prompt=True)
    assert time.monotonic() - start < SECONDS
    assert _max_rss_mb() - before < MEGABYTES
    assert render("still {{ 'fine' }}", messages=MESSAGES) == "still fine"  # the next one works
    return refused.value


@pytest.mark.parametrize(
    "source, words",
    [
        ("{{ x ** 99999999 }}", "more than 1,000,000 bits"),  # T5: one operation at render
        ("{{ 9 ** 999999999 }}", "more than 1,000,000 bits"),  # T6: folded when compiling
        ("{{ 'a' * 3000000000 }}", "wrote more than"),  # T7: 3 GB in one operation
        ("{{ 'a' * 3e9 }}", "failed"),  # T7 as written: a float repeat count
        ("{% set s = 'a' * 20000 %}{{ s.replace('a', s) }}", "more memory"),  # T8: 400 MB
        ("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
         "{% endfor %}{{ ns.s }}", "more memory|wrote more than"),  # T8: doubling, step by step
        ("{{ '%0999999999d' % 1 }}", "more memory|failed"),  # formatting pads in one operation
        ("{{ (x ** 100000)|string }}", "failed: ValueError"),  # T9: a template error
    ],
)
def test_one_big_operation_is_refused_quickly_and_within_memory(source: str, words: str) -> None:
    assert "template" in str(_refused(source, words))


def test_a_template_that_runs_forever_is_stopped_and_then_refused_at_once() -> None:
    from app.templates.jinja_render import helper_pid

    source = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    _refused(source, "ran longer than")
    start = time.monotonic()
    with pytest.raises(JinjaTemplateError, match="ran longer than"):
        render(source, messages=MESSAGES)
    assert time.monotonic() - start < 0.1  # known to overrun: not run again
    assert helper_pid() is not None  # a fresh helper served the render after it


def test_the_helper_runs_under_kernel_limits() -> None:
    from app.templates.jinja_render import RENDER_MEMORY_MB, helper_pid

    render("warm {{ 1 }}", messages=MESSAGES)
    pid = helper_pid()
    assert pid is not None and pid != os.getpid()
    limits = Path(f"/proc/{pid}/limits").read_text()
    address = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    cpu = next(line for line in limits.splitlines() if line.startswith("Max cpu time"))
    status = Path(f"/proc/{pid}/status").read_text()
    size_kb = int(next(line for line in status.splitlines() if line.startswith("VmSize")).split()[1])
    over_mb = int(address.split()[3]) / 2**20 - size_kb / 1024
    assert 0 < over_mb <= RENDER_MEMORY_MB + 8 < MEGABYTES
    assert cpu.split()[3] != "unlimited"


def test_a_gguf_template_refuses_through_the_template_class() -> None:
    from app.templates.jinja import GgufJinja
    from tests.templates.test_templates import WordTokenizer

    template = GgufJinja("{% for m in messages %}{{ m.content }}{{ 9 ** 999999999 }}{% endfor %}")
    chat = Conversation(messages=(Message.of(Role.USER, "hi"),))
    start = time.monotonic()
    with pytest.raises(JinjaTemplateError, match="bits"):
        template.prompt_ids(chat, WordTokenizer())
    assert time.monotonic() - start < SECONDS


# --- loading a GGUF that carries a hostile template ---------------------------------------


def _load_within(path: Path, seconds: float) -> Any:
    """`WorkerClient.load(path)`'s result (or the error it raised), failing if it hangs."""
    from app.engine.local.client import WorkerClient

    client = WorkerClient()
    result: list[Any] = []

    def load() -> None:
        try:
            result.append(client.load(path, n_ctx=256, n_threads=1))
        except Exception as exc:  # the test reads it
            result.append(exc)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(seconds)
    hung = thread.is_alive()
    if hung and client.pid is not None:
        os.kill(client.pid, 9)
    thread.join(10)
    assert not hung, f"loading a model with a hostile chat template took over {seconds} s"
    return client, result[0]


@pytest.mark.parametrize(
    "source", ["{{ 9 ** 999999999 }}", "{{ (9 ** 100000)|string }}", "{{ 'a' * 3000000000 }}"]
)
def test_a_gguf_with_a_hostile_template_loads_and_its_template_is_refused(source: str) -> None:
    from app.engine.local.tokenizer import ModelTokenizer
    from app.templates.registry import get_template
    from tests.tiny_models import build

    client, info = _load_within(build("qwen3", chat_template=source), 60)
    try:
        assert not isinstance(info, Exception), info
        assert info.metadata["tokenizer.chat_template"] == source
        template = get_template("gguf-jinja").for_model(info.metadata)
        chat = Conversation(messages=(Message.of(Role.USER, "hi"),))
        start = time.monotonic()
        with pytest.raises(JinjaTemplateError):
            template.prompt_ids(chat, ModelTokenizer(client))
        assert time.monotonic() - start < SECONDS
    finally:
        client.close()


class _SilentRouter:
    """A worker that never answers (a load stuck in native code)."""

    def __init__(self, said: list[Any]) -> None:
        self.said = said
        self.process = self
        self.pid = None

    def next(self, request: int, timeout: float) -> Any:
        time.sleep(timeout)
        return self.said.pop(0) if self.said else None

    def reap(self) -> None:
        pass


@pytest.mark.parametrize(
    "said, stage", [([], "vocabulary"), ([0.5], r"weights \(50% read\)"), ([1.0], "context")]
)
def test_a_load_that_stalls_is_stopped_and_says_where(said: list[float], stage: str) -> None:
    from app.domain.placement import LoadSettings
    from app.engine.local.client import WorkerClient
    from app.engine.protocol import LoadProgress, LoadRequest, WorkerState

    client = WorkerClient()
    client.load_stall_s = 0.5
    client.state = WorkerState.LOADING
    router: Any = _SilentRouter([LoadProgress(1, f) for f in said])
    client._router = router
    request = LoadRequest(1, "m.gguf", 256, 1, settings=LoadSettings())
    start = time.monotonic()
    with pytest.raises(ModelLoadError, match=f"no sign of progress.*{stage}") as stalled:
        client._await_load(router, "m.gguf", "qwen3", None, None, request)
    assert time.monotonic() - start < SECONDS
    assert stalled.value.problem is LoadProblem.LOAD_FAILED
    assert client.state is WorkerState.FAILED and client._router is None


# --- template files -----------------------------------------------------------------------


def _file_refused(path: Path, words: str) -> None:
    before, start = _max_rss_mb(), time.monotonic()
    with pytest.raises(TemplateFileError, match=words) as refused:
        read_spec(path)
    assert str(path) in str(refused.value)
    assert time.monotonic() - start < SECONDS
    assert _max_rss_mb() - before < MEGABYTES


def test_a_yaml_alias_bomb_of_stop_words_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "bomb.yaml"  # 3 MB: 200k aliases of a 2 MB string
    aliases = ", ".join(["*b"] * 200_000)
    big.write_text(f"model_name: bomb\nbase: chatml\nx: &b {'a' * 2_000_000}\n"
                   f"stop_words: [{aliases}]\n")
    _file_refused(big, "larger than")
    small = tmp_path / "small.yaml"  # within the size: the aliases themselves are refused
    small.write_text("model_name: s\nbase: chatml\nx: &b stop\nstop_words: ["
                     + ", ".join(["*b"] * 200) + "]\n")
    _file_refused(small, "YAML aliases")
    wide = tmp_path / "wide.yaml"  # few aliases, each of a long text
    wide.write_text(f"model_name: w\nbase: chatml\nx: &b {'a' * 100_000}\n"
                    "stop_words: [*b, *b, *b]\n")
    _file_refused(wide, "characters of values")


@pytest.mark.parametrize(
    "stop_words, words",
    [([f"<stop{i}>" for i in range(17)], "17 given"), (["x" * 300], "longer than 256")],
)
def test_stop_words_are_capped_in_count_and_length(
    tmp_path: Path, stop_words: list[str], words: str
) -> None:
    path = tmp_path / "stops.json"
    path.write_text(json.dumps({"model_name": "s", "base": "chatml", "stop_words": stop_words}))
    _file_refused(path, f"stop_words: .*{words}")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_deeply_nested_file_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text('{"model_name": "d", "x": ' + "[" * 20_000 + "]" * 20_000 + "}")
    _file_refused(path, "deep")


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(config)}
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_bad_files_in_the_folder_never_stop_the_others(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "templates"
    folder.mkdir(parents=True)
    (folder / "deep.json").write_text('{"x": ' + "[" * 20_000 + "]" * 20_000 + "}")
    (folder / "deep.yaml").write_text("x: " + "[" * 20_000 + "]" * 20_000 + "\n")
    (folder / "bomb.yaml").write_text("model_name: bomb\nbase: chatml\nx: &b stop\nstop_words: ["
                                      + ", ".join(["*b"] * 500) + "]\n")
    (folder / "good.json").write_text(json.dumps({"model_name": "good", "base": "chatml"}))
    listed = _cli(tmp_path / "config", "templates", "list")
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith("good ") for line in listed.stdout.splitlines())
    for name in ("deep.json", "deep.yaml", "bomb.yaml"):
        assert f"template file not used: {folder / name}" in listed.stderr
    checked = _cli(tmp_path / "config", "templates", "check", str(folder / "bomb.yaml"))
    assert checked.returncode == 2 and "YAML aliases" in checked.stderr
