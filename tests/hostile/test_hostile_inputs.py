"""Hostile inputs from the security review: each one gives a clear error for that input only
(or is read correctly), in time linear in its size; nothing hangs, crashes or blows up memory.

The quadratic imports are run at ten times the size that took the old code past 120 s; they run
in a child process under a generous timeout, so a regression fails instead of hanging the suite.
bench/hostile_inputs.py measures them at 1x and 10x side by side."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from app.errors import HarmonyDeskError, InvalidInputError
from app.gguf.info import read_gguf
from app.inputs import load_json, load_yaml, read_text_file

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, timeout: float = 300) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_open_webui_details_at_ten_times_the_size_that_hung() -> None:
    # 1.1 MB of unclosed <details> openers ran past 120 s; this is 11 MB, with one real block.
    out = _run(
        "import json\n"
        "from app.store.importers import import_any\n"
        "opener = '<details type=\"reasoning\">'\n"
        "content = '<details type=\"reasoning\"><summary>t</summary>> why</details>Answer. '"
        " + opener * (11_000_000 // len(opener))\n"
        "chat = {'chat': {'messages': [{'role': 'user', 'content': 'q'},"
        " {'role': 'assistant', 'content': content}]}}\n"
        "result = import_any(json.dumps(chat))\n"
        "reply = result.docs[0].turns[0].version.replies[0]\n"
        "print(json.dumps([reply.debug.analysis, reply.segments[0].text[:7]]))\n"
    )
    assert json.loads(out) == ["why", "Answer."]


def test_a_reply_of_a_million_messages_imports_in_linear_time() -> None:
    # 100,000 thinking steps in one LM Studio reply took 90 s; this is 1,000,000.
    out = _run(
        "import json\n"
        "from app.store.importers import import_any\n"
        "step = {'type': 'contentBlock', 'style': {'type': 'thinking'},"
        " 'content': [{'type': 'text', 'text': 'x'}]}\n"
        "steps = [step] * 1_000_000 + [{'type': 'contentBlock', 'content': [{'type': 'text', 'text': 'done'}]}]\n"
        "data = {'name': 'big', 'messages': [{'versions': [{'role': 'user', 'content': [{'type': 'text', 'text': 'q'}]}]},"
        " {'versions': [{'role': 'assistant', 'type': 'multiStep', 'steps': steps}]}]}\n"
        "reply = import_any(json.dumps(data)).docs[0].turns[0].version.replies[0]\n"
        "print(len(reply.messages), reply.segments[-1].text)\n",
        timeout=600,
    )
    assert out.split() == ["1000001", "done"]


def test_a_transcript_reply_of_many_messages_converts_in_linear_time() -> None:
    out = _run(
        "from app.domain.messages import Conversation, Message, Role\n"
        "from app.store.exchange import from_domain\n"
        "call = Message.of(Role.ASSISTANT, '{}', channel='commentary', recipient='functions.f')\n"
        "from app.domain.messages import Author, TextContent\n"
        "reply = Message(author=Author(role=Role.TOOL, name='functions.f'), content=(TextContent(text='1'),),"
        " channel='commentary', recipient='assistant')\n"
        "messages = [Message.of(Role.USER, 'q')] + [call, reply] * 100_000\n"
        "doc = from_domain(Conversation(messages=tuple(messages)))\n"
        "r = doc.turns[0].version.replies[0]\n"
        "print(len(r.messages), sum(s.data.get('state') == 'ok' for s in r.segments))\n",
        timeout=600,
    )
    assert out.split() == ["200000", "100000"]


def test_yaml_billion_laughs_and_deep_nesting_are_refused() -> None:
    laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    ) + "title: *i\n"
    import yaml

    with pytest.raises(yaml.YAMLError, match="aliases"):
        load_yaml(laughs)
    with pytest.raises(yaml.YAMLError, match="nested deeper"):
        load_yaml("a: " + "[" * 3000 + "]" * 3000)
    from app.harmony.ocm.convert import load

    with pytest.raises(HarmonyDeskError, match="aliases"):
        load("---\nversion: 2.2\n" + laughs + "---\n<|start|>user<|message|>hi<|end|>\n", "ocm")
    with pytest.raises(InvalidInputError, match="nested deeper"):
        load_json("[" * 3000 + "]" * 3000)


def test_a_lone_surrogate_becomes_a_replacement_character_and_can_be_stored(tmp_path: Path) -> None:
    from app.store.importers import import_any

    text = '{"chat": {"messages": [{"role": "user", "content": "a \\ud800 b"}, {"role": "assistant", "content": "ok \\udfff"}]}}'
    doc = import_any(text).docs[0]
    assert doc.turns[0].version.user_text == "a \ufffd b"
    assert load_json('{"\\ud83d": "\\ud83d\\ude00"}') == {"\ufffd": "\U0001f600"}
    import sqlite3

    sqlite3.connect(":memory:").execute("select ?", (doc.turns[0].version.user_text,))


def test_devices_fifos_and_folders_are_not_read_as_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path, words in ((Path("/dev/zero"), "not a regular file"), (fifo, "not a regular file"),
                        (tmp_path, "not a regular file")):
        with pytest.raises(InvalidInputError, match=words):
            read_text_file(path)
    (tmp_path / "latin1.json").write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        read_text_file(tmp_path / "latin1.json")
    with pytest.raises(InvalidInputError, match="larger than"):
        read_text_file(tmp_path / "latin1.json", limit=4)
    for command in (["history", "import", "/dev/zero"], ["transcript", "check", str(fifo)]):
        done = subprocess.run([sys.executable, "-m", "app", *command], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
        assert done.returncode != 0 and "not a regular file" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def _gguf_header(metadata: bytes, count: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, count) + metadata


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


def test_damaged_gguf_headers_are_one_bad_entry_each(tmp_path: Path, tiny_model: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    arch = _key("general.architecture") + struct.pack("<I", 8) + _key("llama")
    wrong = _key("llama.context_length") + struct.pack("<I", 8) + _key("four thousand")
    (folder / "wrong-type.gguf").write_bytes(_gguf_header(arch + wrong, 2))
    nested = _key("deep") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 3000 + struct.pack("<IQ", 4, 0)
    (folder / "nested.gguf").write_bytes(_gguf_header(nested, 1) + b"\0" * 64)
    os.mkfifo(folder / "fifo.gguf")
    (folder / "tiny.gguf").symlink_to(tiny_model)
    with pytest.raises(HarmonyDeskError, match="its header is damaged") as nested_error:
        read_gguf(folder / "nested.gguf")
    assert "deeper than 8" in nested_error.value.details  # the technical fact: the details
    with pytest.raises(HarmonyDeskError, match="it is a device, pipe or socket, not a file"):
        read_gguf(folder / "fifo.gguf")
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp_path / "data"),
           "HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_CACHE": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-m", "app", "models", "folders", "add", str(folder)],
                   env=env, check=True, capture_output=True, timeout=120, cwd=ROOT)
    listed = subprocess.run([sys.executable, "-m", "app", "models", "list", "--json"], env=env,
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in map(json.loads, listed.stdout.splitlines())}
    assert "its header is damaged" in rows["wrong-type"]["problem"]
    assert "its header is damaged" in rows["nested"]["problem"]
    assert "not a file" in rows["fifo"]["problem"]
    assert rows["tiny"]["problem"] == "" and rows["tiny"]["architecture"] == "gpt-oss"


def test_one_bad_line_never_ends_a_render_or_parse_run() -> None:
    lines = [
        "[" * 3000 + "]" * 3000,
        '{"messages": [{"role": "user", "content": "\\ud800"}]}',
        '{"tokens": [1e999]}',
        "{not json",
        '{"messages": [{"role": "user", "content": "fine"}]}',
    ]
    for verb in ("render", "parse"):
        done = subprocess.run([sys.executable, "-m", "app", "harmony", verb], input="\n".join(lines),
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert "Traceback" not in done.stderr, done.stderr
        out = [json.loads(line) for line in done.stdout.splitlines()]
        assert len(out) == len(lines)
        assert "nested deeper" in out[0]["error"]["message"]
