"""A prompt the context cannot hold, on a real `harmony-desk serve` (SmolLM2 at `--ctx 512`),
through the real SDKs: each API refuses it with the error its clients act on, and the counts.

OpenAI's chat, Responses and completions: a 400 `context_length_exceeded` naming the field that
holds the prompt, its message OpenAI's ("This model's maximum context length is N tokens. ...");
Anthropic's Messages: a 400 `invalid_request_error` whose message starts "prompt is too long: M
tokens > N maximum" (what Claude Code's auto-compact looks for), streamed or not."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.server.test_server import _serve

N_CTX = 512
LONG = "The river runs past the old mill and on to the sea. " * 120  # far past 512 tokens
OPENAI_SAYS = re.compile(
    r"^This model's maximum context length is (\d+) tokens\. However, your messages resulted in"
    r" (\d+) tokens \((\d+) in the messages, (\d+) for the completion\)\. Please reduce the length"
    r" of the messages or completion\. Here the context holds 512 tokens"
)
COMPLETIONS_SAY = re.compile(
    r"^This model's maximum context length is (\d+) tokens, however you requested (\d+) tokens"
    r" \((\d+) in your prompt; (\d+) for the completion\)\. Please reduce your prompt; or"
    r" completion length\."
)
ANTHROPIC_SAYS = re.compile(r"^prompt is too long: (\d+) tokens > (\d+) maximum")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("default", tmp_path_factory.mktemp("ctx"), "--ctx", str(N_CTX), "--max-tokens", "48")


@pytest.fixture(scope="module")
def sdk(base: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def claude(base: str) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=base, api_key="none", max_retries=0, timeout=120) as client:
        yield client


def _counts(error: openai.BadRequestError, said: re.Pattern[str]) -> tuple[int, ...]:
    assert error.status_code == 400 and error.code == "context_length_exceeded", error.body
    found = said.match(str(_message(error)))
    assert found, error.body
    n_ctx, total, prompt, completion = (int(n) for n in found.groups())
    assert n_ctx == N_CTX and prompt > N_CTX and total == prompt + completion
    return n_ctx, total, prompt, completion


def _message(error: openai.BadRequestError) -> Any:
    """The error's own message (the SDK's `message` wraps it in its status)."""
    body = error.body
    return body.get("message") if isinstance(body, dict) else None


@pytest.mark.parametrize("stream", [False, True])
def test_chat_says_the_counts_as_openai_does(sdk: openai.OpenAI, stream: bool) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": LONG}], max_tokens=16,
                                    stream=stream)
    _, _, _, completion = _counts(refused.value, OPENAI_SAYS)
    assert completion == 16 and refused.value.param == "messages"
    assert '"error_behavior": "truncate"' in _message(refused.value)  # what would make it fit, after


def test_responses_name_the_input(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.responses.create(model="m", input=LONG, max_output_tokens=16)
    _counts(refused.value, OPENAI_SAYS)
    assert refused.value.param == "input" and '"truncation": "auto"' in _message(refused.value)


def test_completions_say_it_as_openais_completions_do(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.completions.create(model="m", prompt=LONG, max_tokens=16)
    _, _, _, completion = _counts(refused.value, COMPLETIONS_SAY)
    assert completion == 16 and refused.value.param == "prompt"


@pytest.mark.parametrize("stream", [False, True])
def test_messages_say_prompt_is_too_long_as_anthropic_does(claude: anthropic.Anthropic, stream: bool) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="m", max_tokens=16, messages=[{"role": "user", "content": LONG}],
                               stream=stream)
    body = refused.value.body
    assert refused.value.status_code == 400 and isinstance(body, dict) and body["type"] == "error"
    error = body["error"]
    assert error["type"] == "invalid_request_error"
    found = ANTHROPIC_SAYS.match(error["message"])
    assert found, error["message"]
    prompt, n_ctx = (int(n) for n in found.groups())
    assert n_ctx == N_CTX and prompt > N_CTX
    assert "context holds 512" in error["message"]  # our words, after Anthropic's


def test_a_prompt_that_fits_is_answered(sdk: openai.OpenAI) -> None:
    answer = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert answer.choices[0].finish_reason in ("stop", "length")
