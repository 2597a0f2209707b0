"""A coding agent's pattern against the real `serve` on Gemma 3 270M (a sliding-window model),
with the `openai` SDK as its client: turn 1 is a long system prompt and a first user message;
another request takes the one sequence (`--parallel 1`: an agent's side request); turn 2 sends
the same prompt with the tail of the first user message edited (its date) and a new exchange.
Turn 2 is read only from the context checkpoint before the edit (`cached_tokens`), and its
greedy answer is the one a server that reads it from nothing gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai

from tests.server.test_server import _serve

RULES = " ".join(
    f"Rule {i}: read the file before you edit it, keep changes small, run test {i * 7 % 97}."
    for i in range(60)
)
FILES = " ".join(
    f"File src/mod_{i}.py defines handler_{i}, returning {i * 13 % 101}." for i in range(30)
)


def _first(date: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": f"You are a coding agent in a repository. {RULES}"},
        {
            "role": "user",
            "content": f"The context for this chat. {FILES}\nToday is {date}.\nThe OS is linux.",
        },
    ]


def _ask(client: openai.OpenAI, messages: list[dict[str, str]]) -> Any:
    return client.chat.completions.create(model="default", messages=messages, max_tokens=12,  # type: ignore[arg-type]
                                          temperature=0)  # fmt: skip


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=600)


def _second(first: Any) -> list[dict[str, str]]:
    said = first.choices[0].message.content or "ok"
    return [*_first("Tuesday, 5 May 2026"), {"role": "assistant", "content": said},
            {"role": "user", "content": "Now list the files."}]  # fmt: skip


def test_an_edited_first_message_is_read_again_only_from_the_checkpoint(
    tmp_path: Path, gemma_model: Any
) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "fresh").mkdir()
    args = ("--ctx", "4096", "--parallel", "1", "--speculative", "off")
    for base in _serve(str(gemma_model), tmp_path / "one", *args):
        with _client(base) as client:
            first = _ask(client, _first("Monday, 4 May 2026"))
            total = first.usage.prompt_tokens
            assert total > 1500
            other = [{"role": "system", "content": "You decide who speaks next. " * 30},
                     {"role": "user", "content": "Who speaks next?"}]  # fmt: skip
            _ask(client, other)
            second = _ask(client, _second(first))
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert total - 512 <= cached < total - 10, (total, second.usage)  # the tail's checkpoint
    for base in _serve(str(gemma_model), tmp_path / "fresh", *args):
        with _client(base) as client:
            fresh = _ask(client, _second(first))
    assert fresh.usage.prompt_tokens_details.cached_tokens == 0
    assert second.choices[0].message.content == fresh.choices[0].message.content
