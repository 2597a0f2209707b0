"""Images through the local server, run for real (`harmony-desk serve` on loopback) on the tiny
random-weight vision pair of tests/tiny_vision.py (a 32×32 image becomes 16 tokens), the text
model and its projector side by side in one folder so `serve` pairs them itself: the `openai`
SDK's `image_url` data URLs (whole and streamed), the Responses API's `input_image`, the
`anthropic` SDK's base64 image blocks; refusals with a reason (a remote URL, a cut-short PNG,
a file that is no image, an image to a model that reads text only); and Harmony Desk's own
remote backend sending a conversation with an image to this server."""

from __future__ import annotations

import base64
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import numpy as np
import openai
import pytest
from PIL import Image

from app.domain.endpoint import Endpoint
from app.domain.events import ContentDelta, GenerationDone, RequestSent, TurnFailed
from app.domain.messages import Conversation, ImageContent, user_message
from app.domain.sampling import Sampling
from app.engine.remote.session import RemoteSession
from app.engine.remote.wire import request_body
from app.errors import ErrorCode
from app.images.decode import read
from app.images.kept import remember
from tests import tiny_vision
from tests.server.test_server import _serve
from tests.turns import send

QUESTION = "What is in this picture?"


def png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, "PNG")
    return out.getvalue()


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def image_part(seed: int) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(png(seed)), "detail": "auto"}}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny text model and its projector in one folder, as a user keeps them."""
    where = tmp_path_factory.mktemp("pair")
    for built in (tiny_vision.build_text(), tiny_vision.build_projector()):
        shutil.copy(built, where / built.name)
    return where


@pytest.fixture(scope="module")
def seeing(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    text = next(folder.glob("tiny-vision-text-*.gguf"))
    yield from _serve(str(text), tmp_path_factory.mktemp("seeing"), "--max-tokens", "32")


@pytest.fixture(scope="module")
def blind(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    text = next(folder.glob("tiny-vision-text-*.gguf"))
    yield from _serve(str(text), tmp_path_factory.mktemp("blind"), "--projector", "none")


@pytest.fixture(scope="module")
def sdk(seeing: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{seeing}/v1", api_key="none", max_retries=0) as client:
        yield client


def ask(client: openai.OpenAI, *parts: dict[str, Any], **extra: Any) -> Any:
    content = [*parts, {"type": "text", "text": QUESTION}]
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": content}],
                                          max_tokens=8, temperature=0, **extra)


def test_an_image_is_answered_whole_and_streamed_and_counted_as_its_tokens(seeing: str,
                                                                           sdk: openai.OpenAI) -> None:
    model = sdk.models.list().data[0]
    assert (model.model_extra or {})["architecture"]["input_modalities"] == ["text", "image"]
    whole = ask(sdk, image_part(1))
    text = whole.choices[0].message.content
    assert text and whole.usage is not None
    chunks = list(ask(sdk, image_part(1), stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens
    plain, two = ask(sdk).usage, ask(sdk, image_part(1), image_part(2)).usage
    assert plain is not None and two is not None
    assert whole.usage.prompt_tokens == plain.prompt_tokens + tiny_vision.N_IMAGE_TOKENS
    assert two.prompt_tokens == whole.usage.prompt_tokens + tiny_vision.N_IMAGE_TOKENS


def test_the_same_image_gives_the_same_answer_and_another_a_different_one(sdk: openai.OpenAI) -> None:
    first, again, other = (ask(sdk, image_part(seed)).choices[0].message.content for seed in (1, 1, 2))
    assert first == again
    assert other != first  # the model read the picture, not only the text
    text_first = sdk.chat.completions.create(model="m", max_tokens=8, temperature=0, messages=[
        {"role": "user", "content": [{"type": "text", "text": QUESTION}, image_part(1)]}])
    assert text_first.choices[0].message.content != first  # the parts keep their order


def test_the_responses_api_takes_an_input_image(seeing: str, sdk: openai.OpenAI) -> None:
    content = [{"type": "input_image", "image_url": data_url(png(1)), "detail": "auto"},
               {"type": "input_text", "text": QUESTION}]
    said = sdk.responses.create(model="m", input=[{"role": "user", "content": content}],  # type: ignore[arg-type]
                                max_output_tokens=8, temperature=0)
    assert said.output_text == ask(sdk, image_part(1)).choices[0].message.content
    by_file = [{"role": "system", "content": "Be brief."},
               {"role": "user", "content": [{"type": "input_text", "text": "Hi"},
                                            {"type": "input_image", "file_id": "file-123"}]}]
    refused = httpx.post(f"{seeing}/v1/responses", json={"input": by_file}, timeout=30)
    error = refused.json()["error"]
    assert refused.status_code == 400 and error["param"] == "input.1.content.1" and "file id" in error["message"]
    cut = [{"role": "user", "content": [{"type": "input_image", "image_url": data_url(png(1)[:80])}]}]
    broken = httpx.post(f"{seeing}/v1/responses", json={"instructions": "Be brief.", "input": cut}, timeout=30)
    assert broken.status_code == 400 and broken.json()["error"]["param"] == "input.0.content.0"  # its own name


def test_the_anthropic_sdk_sends_a_base64_image_block(seeing: str, sdk: openai.OpenAI) -> None:
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(png(1)).decode()}}
    messages = [{"role": "user", "content": [block, {"type": "text", "text": QUESTION}]}]
    with anthropic.Anthropic(base_url=seeing, api_key="none", max_retries=0) as client:
        said = client.messages.create(model="m", max_tokens=8, messages=messages,  # type: ignore[arg-type]
                                      extra_body={"temperature": 0})
        counted = client.messages.count_tokens(model="m", messages=messages)  # type: ignore[arg-type]
        text = "".join(b.text for b in said.content if b.type == "text")
        assert text == ask(sdk, image_part(1)).choices[0].message.content
        usage = said.usage
        assert counted.input_tokens == usage.input_tokens + (usage.cache_read_input_tokens or 0)
        by_url = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.create(model="m", max_tokens=8, messages=[  # type: ignore[list-item]
                {"role": "user", "content": [{"type": "text", "text": "Look:"}, by_url]}])
        assert "never fetches" in str(refused.value) and "messages.0.content.1" in str(refused.value)


def _refusal(base: str, content: list[dict[str, Any]], role: str = "user") -> dict[str, Any]:
    messages = [{"role": "user", "content": "Hi"}, {"role": role, "content": content}]
    if role != "user":
        messages.append({"role": "user", "content": "And?"})
    answer = httpx.post(f"{base}/v1/chat/completions", json={"messages": messages, "max_tokens": 4}, timeout=30)
    assert answer.status_code == 400, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["param"] == "messages.1.content.1", error
    return error


@pytest.mark.parametrize(("url", "said"), [
    ("https://example.com/cat.png", "never fetches"),
    (data_url(png(1)[:100]), "cut short"),
    (data_url(b"GIF89a but not really a picture at all"), "not an image"),
    (data_url(json.dumps({"not": "an image"}).encode(), "image/jpeg"), "not an image"),
    ("data:image/png;base64,%%%not-base64%%%", "base64"),
])
def test_a_bad_image_is_a_400_that_says_why(seeing: str, url: str, said: str) -> None:
    error = _refusal(seeing, [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {"url": url}}])
    assert said in error["message"] and error["code"] in ("invalid_image", "invalid_image_url")


def test_images_go_in_user_messages_and_the_marker_is_not_text(seeing: str) -> None:
    error = _refusal(seeing, [{"type": "text", "text": "I drew"}, image_part(1)], role="assistant")
    assert "user messages only" in error["message"]
    marked = httpx.post(f"{seeing}/v1/chat/completions", timeout=30, json={
        "messages": [{"role": "user", "content": "a \ue0f0 b"}], "max_tokens": 4})
    assert marked.status_code == 400 and marked.json()["error"]["param"] == "messages.0.content"


def test_a_model_that_reads_text_only_refuses_images(blind: str) -> None:
    with openai.OpenAI(base_url=f"{blind}/v1", api_key="none", max_retries=0) as client:
        model = client.models.list().data[0]
        assert (model.model_extra or {})["architecture"]["input_modalities"] == ["text"]
        with pytest.raises(openai.BadRequestError) as refused:
            ask(client, image_part(1))
        assert "reads text only" in refused.value.message and "--projector" in refused.value.message
        assert ask(client).choices[0].message.content  # text alone is answered
    error = _refusal(blind, [{"type": "text", "text": "Look:"}, image_part(1)])
    assert error["code"] == "unsupported_content"
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(png(1)).decode()}}
    said = httpx.post(f"{blind}/v1/messages", timeout=30, json={
        "max_tokens": 4, "messages": [{"role": "user", "content": [block]}]})
    assert said.status_code == 400 and "reads text only" in said.json()["error"]["message"]


def test_harmony_desks_remote_backend_sends_an_image_to_its_own_server(seeing: str, sdk: openai.OpenAI) -> None:
    picture = read(png(1), "one.png")
    remember(picture)
    endpoint = Endpoint(name="self", base_url=f"{seeing}/v1", model="tiny")
    session = RemoteSession(endpoint, None, sampling=Sampling(temperature=0.0), max_tokens=8)
    message = user_message(QUESTION, [picture.content()])
    events = list(send(session, message))
    assert not [e for e in events if isinstance(e, TurnFailed)], events
    answer = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert answer == ask(sdk, image_part(1)).choices[0].message.content  # the same request, from the app
    sent = next(e for e in events if isinstance(e, RequestSent)).body
    part = sent["messages"][-1]["content"][0]
    assert part["image_url"]["url"].startswith("data:image/png;base64,…")  # the record keeps no megabytes
    done = next(e for e in events if isinstance(e, GenerationDone))
    assert done.timings.prompt_tokens == ask(sdk, image_part(1)).usage.prompt_tokens  # type: ignore[union-attr]


def test_the_remote_request_carries_the_kept_bytes_and_a_missing_image_fails_the_turn(seeing: str) -> None:
    picture = read(png(3), "three.png")
    remember(picture)
    conversation = Conversation(messages=(user_message("Compare.", [picture.content()]),))
    endpoint = Endpoint(name="self", base_url=f"{seeing}/v1", model="tiny")
    body = request_body(endpoint, None, 8, conversation)
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"] and parts[1]["text"] == "Compare."
    assert parts[0]["image_url"]["url"] == data_url(picture.data)
    gone = ImageContent(sha256="0" * 64, mime="image/png", width=32, height=32, name="gone.png")
    session = RemoteSession(endpoint, None, max_tokens=8)
    events = list(send(session, user_message("And this?", [gone])))
    failed = [e for e in events if isinstance(e, TurnFailed)]
    assert failed and failed[0].code is ErrorCode.INPUT_INVALID and "gone.png" in failed[0].reason
    assert not [e for e in events if isinstance(e, RequestSent)]  # nothing was sent


def test_a_detail_the_projector_does_not_apply_is_said_in_the_warning_header(seeing: str) -> None:
    high = {"type": "image_url", "image_url": {"url": data_url(png(1)), "detail": "high"}}
    for part, warned in ((high, True), (image_part(1), False)):
        said = httpx.post(f"{seeing}/v1/chat/completions", timeout=30, json={
            "messages": [{"role": "user", "content": [part]}], "max_tokens": 2})
        assert said.status_code == 200
        assert ("image_url.detail" in said.headers.get("x-harmony-desk-warning", "")) is warned
