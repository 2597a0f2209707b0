"""An image being encoded is said before the prompt is read on (the newcomer review's M4): the
real worker with the tiny vision pair of tests/tiny_vision.py (a random-weight llama model and
its LLaVA-style projector, through llama.cpp's mtmd) reports "Encoding image 1 of 2…" as its
projector reaches each image of the prompt, in order, before the answer's first token; an image
the cache already holds is not encoded again, so not said; the chat session passes it on as a
turn event, and the terminal chat says the same words on stderr."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from app.cli.terminal_reply import TerminalReply
from app.domain.events import (
    GenerationDone,
    MessageStarted,
    TokenStep,
)
from app.domain.history import Reply
from app.domain.messages import Role, user_message
from app.domain.progress import ImageEncoding, PromptRead
from app.domain.sampling import Sampling
from app.domain.visibility import Lane
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.protocol import IMAGE_ID, Keep
from app.images.decode import pixels
from app.templates.registry import get_template
from tests import tiny_vision
from tests.engine.test_vision_engine import picture
from tests.turns import send


@pytest.fixture(scope="module")
def vision() -> Iterator[Any]:
    client = WorkerClient()
    client.load(tiny_vision.build_text(), n_ctx=512, n_threads=1,
                projector=tiny_vision.build_projector())  # fmt: skip
    yield client
    client.close()


def _prompt(client: Any, images: int) -> list[int]:
    words = client.tokenize("Compare these pictures, please.", False)
    return [*words[:3], *[IMAGE_ID] * images, *words[3:]]


def test_each_image_is_said_in_order_before_the_first_token(vision: Any) -> None:
    images = [pixels(picture(11)), pixels(picture(12))]
    events = list(vision.generate(_prompt(vision, 2), stop_ids=[], max_tokens=2, images=images))
    said = [e for e in events if isinstance(e, ImageEncoding)]
    assert [(e.index, e.count) for e in said] == [(1, 2), (2, 2)]
    assert [e.said() for e in said] == ["Encoding image 1 of 2…", "Encoding image 2 of 2…"]
    first_token = next(i for i, e in enumerate(events) if isinstance(e, TokenStep))
    assert all(isinstance(e, ImageEncoding | PromptRead) for e in events[:first_token])
    assert isinstance(events[-1], GenerationDone) and events[-1].timings.image_tokens == (16, 16)


def test_an_image_the_cache_holds_is_not_said_again(vision: Any) -> None:
    keep, images = Keep("progress-images"), [pixels(picture(13))]
    prompt = _prompt(vision, 1)
    first = list(vision.generate(prompt, stop_ids=[], max_tokens=1, images=images, keep=keep))
    again = list(
        vision.generate([*prompt, 42], stop_ids=[], max_tokens=1, images=images, keep=keep)
    )
    assert [e.said() for e in first if isinstance(e, ImageEncoding)] == ["Encoding image 1 of 1…"]
    done = next(e for e in again if isinstance(e, GenerationDone))
    assert done.timings.prompt_reused > len(prompt)  # the image came from the cache
    assert not [e for e in again if isinstance(e, ImageEncoding)]


def test_the_chat_session_passes_it_on_and_the_terminal_says_the_same(vision: Any) -> None:
    session = ChatSession(
        vision, get_template("smollm2"), max_tokens=4, sampling=Sampling(temperature=0.0)
    )
    message = user_message("What differs?", [picture(14).content(), picture(15).content()])
    events = list(send(session, message))
    said = [e.said() for e in events if isinstance(e, ImageEncoding)]
    assert said == ["Encoding image 1 of 2…", "Encoding image 2 of 2…"]
    err = io.StringIO()
    view = TerminalReply(False, io.StringIO(), err)
    view.begin(Reply())
    for event in events:
        view(event)
    lines = err.getvalue().splitlines()
    assert [line for line in lines if line.startswith("Encoding")] == said  # a line each
    timings = next(i for i, line in enumerate(lines) if "2 images as 32 tokens" in line)
    assert lines.index(said[-1]) < timings  # said before the answer, not after


def test_the_terminal_keeps_a_reading_line_whole_around_an_image() -> None:
    err = io.StringIO()
    view = TerminalReply(False, io.StringIO(), err)
    view.begin(Reply())
    view(PromptRead(256, 900))
    view(ImageEncoding(1, 1))
    view(PromptRead(768, 900))
    view(MessageStarted(0, Role.ASSISTANT, None, "final", None, None, Lane.ANSWER))
    assert err.getvalue() == "Reading 900 tokens…\nEncoding image 1 of 1…\nRead 900 tokens.\n"
