"""`serve --rope-scale`, run for real on the bundled SmolLM2 (trained at 8,192 tokens) with the
`openai` SDK as its client: with YaRN x2 and `--ctx 16384` it reads a prompt of about 8,600
tokens (past the trained context, and little more: reading it takes minutes on two cores) and
answers the question at its end from the line at its start, greedy, ending its turn itself; the
same model on its own RoPE (its trained context, the default) refuses that prompt with the 400
`context_length_exceeded` and the counts; without `--ctx` the scaled context is the trained one
times the scale, said on stderr; a scale below 1 or not a number is refused by the parser (exit
status 2) before anything loads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.server.test_server import ROOT, _free_port

TRAINED = 8192
COLOURS = ("red", "green", "blue", "white")
LINES = [f"Entry {i}: the lamp in room {i} is {COLOURS[i % 4]}." for i in range(1, 490)]
DOCUMENT = "The password for the vault is PINEAPPLE.\n" + "\n".join(LINES)
QUESTION = "What is the password for the vault? Answer in one word."
ASKED: list[ChatCompletionMessageParam] = [{"role": "user", "content": f"{DOCUMENT}\n\n{QUESTION}"}]


class Served:
    """A `serve` process on the bundled model with `extra` arguments; its output in `log`."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        self.port, self.log = _free_port(), tmp / "serve.log"
        env = {**os.environ, "HARMONY_DESK_DATA": str(tmp / "data"),
               "HARMONY_DESK_CACHE": str(tmp / "cache")}  # fmt: skip
        command = [sys.executable, "-m", "app", "serve", "--port", str(self.port), "--parallel",
                   "1", "--threads", "1", "--max-tokens", "64", *extra]  # fmt: skip
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
        self.base = f"http://127.0.0.1:{self.port}"

    def wait_up(self) -> str:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.base}/v1/models", timeout=2).status_code == 200:
                    return self.base
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError(f"the server did not start: {self.log.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _serving(tmp: Path, *extra: str) -> Iterator[Served]:
    served = Served(tmp, *extra)
    try:
        served.wait_up()
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from _serving(tmp_path_factory.mktemp("yarn"), "--rope-scale", "2", "--ctx", "16384")


def _sdk(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=900)


@pytest.mark.slow
def test_yarn_x2_answers_a_prompt_past_the_trained_context(scaled: Served) -> None:
    with _sdk(scaled.base) as client:
        answer = client.chat.completions.create(
            model="default",
            messages=ASKED,
            max_tokens=40,
            temperature=0.0,
        )
    assert answer.usage is not None and answer.usage.prompt_tokens > TRAINED, answer.usage
    choice = answer.choices[0]
    assert choice.finish_reason == "stop", choice
    assert "PINEAPPLE" in (choice.message.content or "").upper(), choice.message.content
    said = scaled.log.read_text()
    assert "16384 context, YaRN x2 of 8,192" in said, said


def test_the_model_on_its_own_rope_refuses_that_prompt(tmp_path: Path) -> None:
    for plain in _serving(tmp_path):
        with _sdk(plain.base) as client, pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="default", messages=ASKED, max_tokens=40)
        error = refused.value
        assert error.code == "context_length_exceeded", error.body
        message = str(error.message)
        assert f"maximum context length is {TRAINED} tokens" in message, message
        assert (
            "Context: 8,192 tokens for each of 1 answers at once (the model's trained context"
            in (plain.log.read_text())
        )


def test_without_ctx_the_context_is_the_trained_one_times_the_scale(tmp_path: Path) -> None:
    for served in _serving(tmp_path, "--rope-scale", "2"):
        said = served.log.read_text()
        assert (
            "Context: 16,384 tokens for each of 1 answers at once (trained 8,192, YaRN x2;" in said
        )
        assert "(16384 context, YaRN x2 of 8,192," in said, said


@pytest.mark.parametrize("scale", ["0.5", "inf", "four"])
def test_a_scale_below_one_or_not_a_number_is_refused(tmp_path: Path, scale: str) -> None:
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data"),
           "HARMONY_DESK_CACHE": str(tmp_path / "cache")}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "app", "serve", "--rope-scale", scale],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done
    assert (
        f"argument --rope-scale: {scale} is not a scale: give a number of at least 1" in done.stderr
    )
    assert "Loading" not in done.stderr
