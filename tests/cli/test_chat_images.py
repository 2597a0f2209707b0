"""`harmony-desk chat --image` and `/image`, run as real subprocesses on the tiny vision pair of
tests/tiny_vision.py (a random-weight llama text model and its LLaVA-style projector, through
llama.cpp's mtmd): the image goes through the projector into the prompt, the answer streams, the
saved conversation keeps the image and its bytes, and an export carries them to another data
folder where the conversation reopens (and goes on) exactly. Bad images and a model that reads
text only are told in one clear line."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.documents.kept import KeptFiles
from app.domain.messages import ImageContent
from app.images.decode import read
from app.store.history import HistoryStore
from tests import tiny_vision

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The text model with its projector beside it, alone in a folder (so it pairs by itself)."""
    folder = tmp_path_factory.mktemp("vision-models")
    (folder / "tiny-vision.gguf").symlink_to(tiny_vision.build_text())
    (folder / "mmproj-tiny-vision.gguf").symlink_to(tiny_vision.build_projector())
    return folder / "tiny-vision.gguf"


def picture_file(folder: Path, name: str, seed: int) -> Path:
    pixels = np.random.default_rng(seed).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    path = folder / name
    path.write_bytes(buf.getvalue())
    return path


def content_of(path: Path) -> ImageContent:
    return read(path.read_bytes(), path.name).content()


def app(data: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARMONY_DESK_DATA": str(data), "HARMONY_DESK_CONFIG": str(data.parent / "config")}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=180, check=False)  # fmt: skip


def chat(data: Path, model: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return app(data, "chat", "--model", str(model), "--max-tokens", "8", "--seed", "1", "--threads", "1",
               "--temperature", "0", *args, stdin=stdin)  # fmt: skip


def saved_id(stderr: str) -> str:
    return stderr.split("[saved as ")[1].split(":")[0]


def test_an_image_goes_through_the_projector_is_saved_exported_and_reopens_exactly(tmp_path: Path, pair: Path) -> None:
    cat, other = picture_file(tmp_path, "cat.png", 1), picture_file(tmp_path, "other.png", 2)
    data = tmp_path / "here" / "data"
    done = chat(data, pair, "--image", str(cat), "--prompt", "What is this?", "--save")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[image] cat.png, 32×32 PNG" in done.stderr
    assert "with its projector mmproj-tiny-vision.gguf" in done.stderr
    # the image became its 16 tokens in the prompt (the projector's output in the KV cache)
    assert f"1 image as {tiny_vision.N_IMAGE_TOKENS} tokens" in done.stderr
    assert done.stdout.strip()
    # the image decides the answer: another one gives another
    again = chat(tmp_path / "scratch" / "data", pair, "--image", str(other), "--prompt", "What is this?")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.strip() and again.stdout != done.stdout

    conversation = saved_id(done.stderr)
    store = HistoryStore(data / "history.db")
    doc = store.load(conversation)
    store.close()
    assert doc is not None and doc.turns[0].version.images == (content_of(cat),)
    assert doc.turns[0].version.user_text == "What is this?"
    reply = doc.turns[0].version.reply
    assert reply is not None and reply.state == "done" and reply.visible_text().strip() == done.stdout.strip()
    kept = KeptFiles(data / "attachments")
    [(name, stored)] = kept.files_of(doc.turns[0].version.id)
    kept.close()
    assert name == "cat.png" and stored.read_bytes() == cat.read_bytes()

    exported = tmp_path / "chat.ocm"
    out = app(data, "history", "export", conversation, str(exported))
    assert out.returncode == 0, out.stderr
    there = tmp_path / "there" / "data"  # another computer: an empty data folder
    imported = app(there, "history", "import", str(exported))
    assert imported.returncode == 0 and "not restored" not in imported.stderr, imported.stderr
    new_id = imported.stdout.split()[0]
    store = HistoryStore(there / "history.db")
    back = store.load(new_id)
    store.close()
    assert back is not None and back.turns[0].version.images == (content_of(cat),)
    assert back.messages()[0] == doc.messages()[0]
    kept = KeptFiles(there / "attachments")
    [(name, stored)] = kept.files_of(back.turns[0].version.id)
    kept.close()
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == content_of(cat).sha256

    # the imported conversation goes on there: its image read back from the kept bytes
    resumed = chat(there, pair, "--resume", new_id, "--prompt", "And now?")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"1 image as {tiny_vision.N_IMAGE_TOKENS} tokens" in resumed.stderr
    store = HistoryStore(there / "history.db")
    reopened = store.load(new_id)
    store.close()
    assert reopened is not None and [t.version.images for t in reopened.turns] == [(content_of(cat),), ()]


def test_a_file_that_is_not_an_image_ends_the_command_with_one_line(tmp_path: Path, pair: Path) -> None:
    text = tmp_path / "notanimage.txt"
    text.write_text("hello, not a picture\n")
    done = chat(tmp_path / "data", pair, "--image", str(text), "--prompt", "What is this?")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "harmony-desk: E-INPUT-INVALID notanimage.txt is not an image Harmony Desk can read"
        " (PNG, JPEG, WebP, GIF or BMP)"
    ]
    assert done.stdout == ""
    missing = chat(tmp_path / "data", pair, "--image", str(tmp_path / "gone.png"), "--prompt", "Hi")
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        f"harmony-desk: E-INPUT-INVALID cannot read the image {tmp_path / 'gone.png'}: No such file or directory"
    ]


def test_images_in_the_conversation_and_a_model_that_reads_text_only(tmp_path: Path, pair: Path) -> None:
    cat = picture_file(tmp_path, "cat.png", 1)
    (tmp_path / "notes.txt").write_text("not a picture")
    data = tmp_path / "data"
    script = f"/image {tmp_path / 'notes.txt'}\n/image\n/image {cat}\nWhat is it?\nAnd this?\n"
    done = chat(data, pair, "--save", stdin=script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[image not attached] notes.txt is not an image Harmony Desk can read" in done.stderr
    assert "[usage] /image FILE adds an image to your next message" in done.stderr
    assert "[image] cat.png, 32×32 PNG: it goes with your next message" in done.stderr
    assert f"1 image as {tiny_vision.N_IMAGE_TOKENS} tokens" in done.stderr
    store = HistoryStore(data / "history.db")
    doc = store.load(saved_id(done.stderr))
    store.close()
    assert doc is not None and [t.version.user_text for t in doc.turns] == ["What is it?", "And this?"]
    assert [t.version.images for t in doc.turns] == [(content_of(cat),), ()]

    # the same model without its projector reads text only: the turn fails with a clear sentence
    text_only = chat(data, pair, "--projector", "none", "--image", str(cat), "--prompt", "What is it?")
    assert text_only.returncode == 1 and text_only.stdout == ""
    assert ("[turn failed] tiny-vision.gguf reads text only, and the conversation has images: choose a model"
            " that sees images (one with its projector, an mmproj file), or start a new chat") in text_only.stderr
    # and in the conversation, /image is refused at once; the chat goes on in text
    typed = chat(data, pair, "--projector", "none", stdin=f"/image {cat}\nHello\n")
    assert typed.returncode == 0 and typed.stdout.strip()
    assert ("[image not attached] tiny-vision.gguf reads text only: load it with its projector"
            " (--projector FILE, or an mmproj GGUF in its folder) to send images") in typed.stderr
    assert "image as" not in typed.stderr and "[turn failed]" not in typed.stderr
