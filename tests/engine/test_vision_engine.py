"""Images through the engine on a real llama.cpp with a real projector: the tiny random-weight
LLaVA-style pair of tests/tiny_vision.py (a 32×32 image becomes 16 tokens) loaded by the
worker, the image decoded by the app (Pillow, with limits), expanded and evaluated in the
worker; KV reuse and snapshots treat an image as the tokens it became."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.domain.events import GenerationDone, PromptRendered, TurnFailed
from app.domain.messages import IMAGE_MARKER, Conversation, user_message
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.session import ChatSession
from app.engine.protocol import IMAGE_ID, SnapshotSettings
from app.errors import LoadProblem, ModelLoadError
from app.images.decode import Picture, read
from app.images.kept import remember
from app.templates.registry import get_template
from tests import tiny_vision
from tests.turns import send

KEY = bytes(range(32))  # the install's snapshot key (the app reads it from the keyring)

GREEDY = Sampling(temperature=0.0)


def png(seed: int, size: tuple[int, int] = (32, 32), mode: str = "RGB") -> bytes:
    channels = {"RGB": 3, "RGBA": 4}[mode]
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, mode).save(out, "PNG")
    return out.getvalue()


def picture(seed: int) -> Picture:
    kept = read(png(seed), f"picture-{seed}.png")
    remember(kept)
    return kept


@pytest.fixture(scope="module")
def pair() -> tuple[Path, Path]:
    return tiny_vision.build_text(), tiny_vision.build_projector()


@pytest.fixture(scope="module")
def vision(pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    client = WorkerClient()
    folder = tmp_path_factory.mktemp("kv")
    client.load(pair[0], n_ctx=512, n_threads=1, projector=pair[1],
                snapshots=SnapshotSettings(str(folder), key=KEY))  # fmt: skip
    yield client
    client.close()


def ask(client: Any, *messages: Any, conversation: str = "") -> tuple[list[Any], ChatSession]:
    session = ChatSession(client, get_template("smollm2"), max_tokens=6, sampling=GREEDY)
    events: list[Any] = []
    for message in messages:
        events += list(send(session, message, keep=conversation))
    return events, session


def done_of(events: list[Any]) -> Any:
    return [e for e in events if isinstance(e, GenerationDone)][-1].timings


def answer(session: ChatSession) -> str:
    return session.conversation.messages[-1].text


def test_an_image_goes_through_the_projector_into_the_cache_and_steers_the_answer(
    vision: Any,
) -> None:
    one, two = picture(1), picture(2)
    first, s1 = ask(vision, user_message("What is this?", [one.content()]))
    [rendered] = [e for e in first if isinstance(e, PromptRendered)]
    assert rendered.ids.count(IMAGE_ID) == 1  # the app's prompt holds the image's place
    t1 = done_of(first)
    assert t1.image_tokens == (16,)
    assert t1.prompt_tokens == len(rendered.ids) - 1 + 16  # the image as the 16 tokens it became
    again, s2 = ask(vision, user_message("What is this?", [one.content()]))
    t2 = done_of(again)
    assert answer(s2) == answer(s1)
    assert t2.prompt_reused == t2.prompt_tokens - 1  # the image too came from the cache
    other, s3 = ask(vision, user_message("What is this?", [two.content()]))
    t3 = done_of(other)
    assert answer(s3) != answer(s1)
    assert t3.prompt_reused < rendered.ids.index(IMAGE_ID) + 1  # never past another image
    back, s4 = ask(vision, user_message("What is this?", [one.content()]))  # after the other
    t4 = done_of(back)  # the first image's state, kept in the prompt cache, comes back
    assert (t4.prompt_restored, t4.restored_from) == (t4.prompt_tokens - 1, "memory")
    assert answer(s4) == answer(s1)


def test_two_images_even_the_same_one_twice_each_take_their_place(vision: Any) -> None:
    one, two = picture(1), picture(2)
    events, _ = ask(vision, user_message("Compare.", [one.content(), one.content(), two.content()]))
    t = done_of(events)
    assert t.image_tokens == (16, 16, 16)
    swapped, _ = ask(vision, user_message("Compare.", [two.content(), one.content(), one.content()]))
    assert done_of(swapped).image_tokens == (16, 16, 16)


def test_a_follow_up_turn_reads_only_what_is_new(vision: Any) -> None:
    events, _ = ask(
        vision, user_message("Look.", [picture(3).content()]), "And now?", conversation="chat-v"
    )
    first, second = [e.timings for e in events if isinstance(e, GenerationDone)]
    assert second.image_tokens == (16,)
    assert second.prompt_reused + second.prompt_restored >= first.prompt_tokens
    assert second.prompt_evaluated < second.prompt_tokens - first.prompt_tokens + 8


def test_a_restart_restores_a_conversation_with_an_image_from_disk(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    def run(projector: Path, history: Any, message: Any) -> tuple[Any, Any]:
        client = WorkerClient()
        try:
            client.load(pair[0], n_ctx=512, n_threads=1, projector=projector,
                        snapshots=SnapshotSettings(str(tmp_path), key=KEY))  # fmt: skip
            session = ChatSession(client, get_template("smollm2"), max_tokens=6, sampling=GREEDY)
            events = list(send(session, message, keep="chat-disk", conversation=history))
            return done_of(events), session.conversation
        finally:
            client.close()

    before, history = run(pair[1], None, user_message("Look.", [picture(4).content()]))
    after, _ = run(pair[1], history, "Again?")
    assert after.restored_from == "disk" and after.prompt_restored >= before.prompt_tokens
    assert after.image_tokens == (16,)
    other = tiny_vision.build_projector(seed=999)  # another projector: its images are others
    moved, _ = run(other, history, "Again?")
    assert moved.prompt_restored == 0 and moved.prompt_reused == 0


def test_a_text_only_model_says_it_reads_no_images(pair: tuple[Path, Path]) -> None:
    client = WorkerClient()
    try:
        info = client.load(pair[0], n_ctx=512, n_threads=1)
        assert info.projector == ""
        events, _ = ask(client, user_message("What is this?", [picture(1).content()]))
        [failed] = [e for e in events if isinstance(e, TurnFailed)]
        assert "reads text only" in failed.reason and "projector" in failed.reason
        events, session = ask(client, "Plain text still works.")
        assert done_of(events).generated > 0 and answer(session)
    finally:
        client.close()


def test_text_spelling_the_image_marker_is_refused_not_misread(vision: Any) -> None:
    events, _ = ask(vision, user_message(f"a stray {IMAGE_MARKER} here", [picture(1).content()]))
    [failed] = [e for e in events if isinstance(e, TurnFailed)]
    assert "U+E0F0" in failed.reason


def test_an_image_no_longer_kept_is_named(vision: Any) -> None:
    gone = read(png(77), "gone.png").content()  # read, never remembered nor kept
    events, _ = ask(vision, user_message("What is this?", [gone]))
    [failed] = [e for e in events if isinstance(e, TurnFailed)]
    assert "gone.png" in failed.reason and "no longer kept" in failed.reason


def test_a_projector_for_another_model_is_refused_with_why(pair: tuple[Path, Path]) -> None:
    client = WorkerClient()
    try:
        with pytest.raises(ModelLoadError) as caught:
            client.load(pair[0], n_ctx=512, n_threads=1,
                        projector=tiny_vision.build_projector(n_embd_text=128))  # fmt: skip
        assert caught.value.problem is LoadProblem.LOAD_FAILED
        assert "cannot be used with this model" in caught.value.message
        assert "n_embd" in caught.value.message  # llama.cpp's own reason, carried
        assert client.load(pair[0], n_ctx=512, n_threads=1).projector == ""
    finally:
        client.close()


def test_a_damaged_projector_kills_only_the_worker_and_says_so(pair: tuple[Path, Path]) -> None:
    client = WorkerClient()
    try:
        with pytest.raises(ModelLoadError) as caught:
            client.load(pair[0], n_ctx=512, n_threads=1,
                        projector=tiny_vision.build_projector(drop=("mm.0.weight",)))  # fmt: skip
        assert "stopped while loading its projector" in caught.value.message
        assert client.load(pair[0], n_ctx=512, n_threads=1, projector=pair[1]).projector
    finally:
        client.close()


def test_two_clients_with_images_decoded_side_by_side_get_what_each_gets_alone(
    pair: tuple[Path, Path],
) -> None:
    import threading

    client = WorkerClient()
    try:
        client.load(pair[0], n_ctx=512, n_threads=1, projector=pair[1], sequences=2)
        asked = {seed: user_message(f"Describe {seed}.", [picture(seed).content()]) for seed in (5, 6)}
        alone = {seed: answer(ask(client, m)[1]) for seed, m in asked.items()}
        together: dict[int, str] = {}

        def run(seed: int) -> None:
            together[seed] = answer(ask(client, asked[seed])[1])

        threads = [threading.Thread(target=run, args=(seed,)) for seed in asked]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert together == alone and alone[5] != alone[6]
    finally:
        client.close()


def test_the_models_own_jinja_template_writes_the_image_where_the_message_has_it(
    vision: Any,
) -> None:
    template = get_template("gguf-jinja").for_model(vision.info.metadata)
    session = ChatSession(vision, template, max_tokens=4, sampling=GREEDY)
    events = list(send(session, user_message("What is this?", [picture(1).content()])))
    [rendered] = [e for e in events if isinstance(e, PromptRendered)]
    assert rendered.ids.count(IMAGE_ID) == 1
    text_after = vision.tokenize("What is this?", False)
    at = rendered.ids.index(IMAGE_ID)
    assert list(rendered.ids[at + 1 : at + 1 + len(text_after)]) == text_after
    assert done_of(events).image_tokens == (16,)


def test_the_context_budget_counts_an_image_as_the_tokens_it_becomes(vision: Any) -> None:
    assert vision.info.image_tokens == tiny_vision.N_IMAGE_TOKENS  # the projector's own figure
    events, session = ask(vision, user_message("What is this?", [picture(8).content()]))
    [rendered] = [e for e in events if isinstance(e, PromptRendered)]
    asked = Conversation(messages=session.conversation.messages[:-1])  # as it was sent
    budget = session.fit(asked).event.budget
    assert budget.history + budget.instructions == len(rendered.ids) - 1 + 16
