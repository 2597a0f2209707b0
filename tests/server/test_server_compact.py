"""`serve --compact`: a prompt past the threshold is answered from a summary of its older
exchanges, said in the `X-Harmony-Desk-Compacted` header and the usage's `compacted` object, and
the next request that resends the conversation reuses the kept summary (and its cached prefix).

The kept compactions (`app/server/compactions.py`) first, as values; then a real server on the
bundled SmolLM2 at `--ctx 1024` through the `openai` SDK (and Anthropic's)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from app.domain.budget import Budget
from app.domain.compaction import Compaction, fingerprint
from app.domain.events import Compacted, ContextFit, TurnEvent
from app.domain.messages import Conversation, Message, Role
from app.server.compactions import HEADER, Compactions, Reused, carried, said
from app.startup import LOG_NAME
from tests.server.test_server import _serve

# --- the kept compactions ------------------------------------------------------------------------


def _chat(exchanges: int, about: str = "") -> Conversation:
    messages = [Message.of(Role.SYSTEM, "Be brief.")]
    for n in range(exchanges):
        messages += [Message.of(Role.USER, f"Question {n}{about}?"), Message.of(Role.ASSISTANT, f"Answer {n}.")]
    return Conversation(messages=tuple(messages))


def _made(conversation: Conversation, exchanges: int, summary: str = "S") -> Compaction:
    covered = conversation.messages[1 : 1 + 2 * exchanges]
    return Compaction(summary, 2 * exchanges, fingerprint(covered), exchanges, 900, 300)


def test_the_kept_compaction_that_applies_is_found_for_its_tenant_only() -> None:
    kept = Compactions()
    chat = _chat(6).with_message(Message.of(Role.USER, "Next?"))
    short, long = _made(chat, 2), _made(chat, 4)
    kept.keep("a", short)
    kept.keep("a", long)
    assert kept.find("a", chat) == long  # the one that covers the most
    assert kept.find("b", chat) is None  # another tenant's is never given
    edited = Conversation(messages=(chat.messages[0], Message.of(Role.USER, "Edited?"), *chat.messages[2:]))
    assert kept.find("a", edited) is None  # an edited early message: none applies
    assert kept.find("a", _chat(2)) is None  # nothing follows what it covers


def test_the_least_recently_used_compaction_goes_first() -> None:
    kept = Compactions(size=2)
    chats = [_chat(3, f"{n}") for n in range(3)]
    made = [_made(chat, 1, f"summary {n}") for n, chat in enumerate(chats)]
    kept.keep("a", made[0])
    kept.keep("a", made[1])
    assert kept.find("a", chats[0]) == made[0]  # found: now the most recently used
    kept.keep("a", made[2])
    assert len(kept) == 2 and kept.find("a", chats[1]) is None
    assert kept.find("a", chats[0]) == made[0] and kept.find("a", chats[2]) == made[2]


def test_a_turns_compactions_are_kept_and_a_reused_one_is_said() -> None:
    chat = _chat(4).with_message(Message.of(Role.USER, "Next?"))
    made, fit = _made(chat, 2), ContextFit(Budget(1024, history=300))
    kept = Compactions()
    events: list[TurnEvent] = [Compacted(made), fit]
    assert list(carried(kept, "a", None, iter(events))) == events and kept.find("a", chat) == made
    assert list(carried(kept, "a", made, iter([fit, fit]))) == [Reused(made), fit, fit]
    assert list(carried(kept, "a", made, iter(events))) == events  # a new one made: none reused
    assert said(made, False) == "2 exchanges summarised, 900 -> 300 tokens"
    assert said(made, True).endswith("(the kept summary, reused)")


# --- a real server ------------------------------------------------------------------------------

N_CTX = 1024
TOPICS = ["the Nile", "the Amazon", "the Yangtze", "the Danube", "the Rhine", "the Volga", "the Thames",
          "the Seine", "the Mekong", "the Congo", "the Niger", "the Ganges"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[openai.OpenAI, Path]]:
    """The SDK's client of a `serve --compact`, and the server's log file."""
    tmp = tmp_path_factory.mktemp("compact")
    for base in _serve("default", tmp, "--ctx", str(N_CTX), "--max-tokens", "48", "--compact"):
        with openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=300) as client:
            yield client, tmp / "data" / "logs" / LOG_NAME


@pytest.fixture(scope="module")
def sdk(served: tuple[openai.OpenAI, Path]) -> openai.OpenAI:
    return served[0]


def _history() -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You are a helpful assistant. You answer briefly."}]
    for topic in TOPICS:
        messages += [{"role": "user", "content": f"Tell me about {topic}, its length and where it flows."},
                     {"role": "assistant", "content": f"{topic.capitalize()} is a great river. " * 8}]
    return messages


def _asked(sdk: openai.OpenAI, messages: list[dict[str, str]], **extra: Any) -> tuple[Any, dict[str, str]]:
    raw = sdk.chat.completions.with_raw_response.create(
        model="m", messages=messages, max_tokens=24, temperature=0, **extra  # type: ignore[arg-type]
    )
    return raw.parse(), dict(raw.headers)


def _logged(log: Path, path: str, count: int) -> list[str]:
    """The log's lines for `path`, once `count` are written (the line follows the answer's last byte)."""
    deadline = time.monotonic() + 30
    while True:
        lines = [line for line in log.read_text().splitlines() if path in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def test_a_long_conversation_is_compacted_then_its_summary_reused(served: tuple[openai.OpenAI, Path]) -> None:
    sdk, log = served
    asked = [*_history(), {"role": "user", "content": "Which river did I ask about first?"}]
    answer, headers = _asked(sdk, asked)
    assert answer.choices[0].message.content is not None and answer.usage is not None
    compacted = (answer.usage.model_extra or {})["compacted"]
    assert compacted["reused"] is False and compacted["tokens_after"] < compacted["tokens_before"]
    assert compacted["tokens_before"] > N_CTX  # it would not have fitted: no 400
    said = headers[HEADER.lower()]
    assert said.startswith(f"{compacted['exchanges']} exchanges summarised,") and "reused" not in said
    assert answer.usage.prompt_tokens + 24 <= N_CTX
    again = [*asked, {"role": "assistant", "content": answer.choices[0].message.content},
             {"role": "user", "content": "And which one did I ask about last?"}]
    second, headers = _asked(sdk, again)
    assert second.usage is not None
    reused = (second.usage.model_extra or {})["compacted"]
    assert reused == {**compacted, "reused": True}  # the same summary: none made again
    assert headers[HEADER.lower()] == f"{said} (the kept summary, reused)"
    details = second.usage.prompt_tokens_details
    assert details is not None and details.cached_tokens
    assert details.cached_tokens >= answer.usage.prompt_tokens // 2  # the summary's prefix was cached
    lines = _logged(log, "/v1/chat/completions", 2)
    assert f"compacted: {said};" in lines[-2] and f"compacted: {said} (the kept summary, reused);" in lines[-1]


def test_a_request_that_names_its_policy_keeps_it(sdk: openai.OpenAI) -> None:
    asked = [*_history(), {"role": "user", "content": "Which river did I ask about first?"}]
    with pytest.raises(openai.BadRequestError) as refused:
        _asked(sdk, asked, extra_body={"overflow": "stop"})
    assert refused.value.code == "context_length_exceeded"


def test_anthropics_messages_are_compacted_too(sdk: openai.OpenAI) -> None:
    import anthropic

    history = _history()[1:]
    history[0] = {"role": "user", "content": "First, a word on rivers in general, then tell me about the Nile."}
    base = str(sdk.base_url).removesuffix("/v1/")
    with anthropic.Anthropic(base_url=base, api_key="none", max_retries=0, timeout=300) as claude:
        raw = claude.messages.with_raw_response.create(
            model="m", max_tokens=24, system="You answer briefly.",
            messages=[*history, {"role": "user", "content": "Which river came first?"}],  # type: ignore[list-item]
        )
    message = raw.parse()
    compacted = (message.usage.model_extra or {})["compacted"]
    assert compacted["reused"] is False and compacted["tokens_before"] > N_CTX
    assert raw.headers[HEADER].startswith(f"{compacted['exchanges']} exchanges summarised,")
    assert message.content and message.usage.input_tokens + message.usage.cache_read_input_tokens < N_CTX
