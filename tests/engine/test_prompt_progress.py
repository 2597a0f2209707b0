"""How far a long prompt is read, reported by the real worker after each batch (the newcomer
review's M4): a prompt longer than one batch (`N_BATCH`) gives `PromptRead`s, in order, before
its first token, counting only the tokens evaluated (a cached prefix is not read again); a
short one gives none; the terminal chat draws them as one progress step."""

from __future__ import annotations

import io
from typing import Any

from app.cli.terminal_reply import TerminalReply
from app.domain.events import GenerationDone, MessageStarted, TokenStep
from app.domain.history import Reply
from app.domain.messages import Role
from app.domain.progress import PromptRead
from app.domain.visibility import Lane
from app.engine.protocol import N_BATCH, Keep


def _events(client: Any, prompt: list[int], keep: Keep | None = None) -> list[Any]:
    return list(client.generate(prompt, stop_ids=[], max_tokens=2, keep=keep))


def test_a_long_prompt_is_reported_after_each_batch_before_its_first_token(
    tiny_client: Any,
) -> None:
    prompt = [1000 + (i * 7) % 5000 for i in range(3 * N_BATCH + 100)]
    events = _events(tiny_client, prompt)
    read = [e for e in events if isinstance(e, PromptRead)]
    assert [(r.done, r.total) for r in read] == [(n * N_BATCH, len(prompt)) for n in (1, 2, 3)]
    first_token = next(i for i, e in enumerate(events) if isinstance(e, TokenStep))
    assert all(isinstance(e, PromptRead) for e in events[:first_token])
    assert isinstance(events[-1], GenerationDone)
    assert read[0].said() == f"Reading {len(prompt):,} tokens… {100 * N_BATCH // len(prompt)} %"


def test_a_short_prompt_or_a_cached_prefix_is_not_read_again(tiny_client: Any) -> None:
    assert not [e for e in _events(tiny_client, list(range(500, 600))) if isinstance(e, PromptRead)]
    keep = Keep("progress-test")
    prompt = [2000 + (i * 11) % 4000 for i in range(2 * N_BATCH + 10)]
    _events(tiny_client, prompt, keep)
    longer = prompt + [3000 + i for i in range(N_BATCH + 50)]
    read = [e for e in _events(tiny_client, longer, keep) if isinstance(e, PromptRead)]
    done = next(
        e for e in _events(tiny_client, [*longer, 7], keep) if isinstance(e, GenerationDone)
    )
    assert done.timings.prompt_reused > 0
    assert read and all(r.total < len(longer) for r in read)  # the kept prefix is not counted


def test_the_terminal_says_the_reading_on_a_line_before_and_after() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = TerminalReply(False, out, err)
    view.begin(Reply())
    for done in (256, 512, 768):
        view(PromptRead(done, 900))
    view(MessageStarted(0, Role.ASSISTANT, None, "final", None, None, Lane.ANSWER))  # the answer
    assert err.getvalue().startswith("Reading 900 tokens…\nRead 900 tokens.\n")
