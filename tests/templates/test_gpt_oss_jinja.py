"""gpt-oss's own Jinja template is Harmony: only that template of the official corpus is
recognised as Harmony, a GGUF carrying it (whatever its architecture) gets the built-in
`harmony` template, `replay --template openai-gpt-oss-120b.jinja` reads its calls through the
Harmony parser, and the prompt it gives is the Harmony renderer's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli.replay_template import ByteTokenizer, template_named
from app.domain.messages import Conversation, Message, Role
from app.gguf.info import read_gguf
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja import harmony_source, jinja_template
from app.templates.registry import default_template_name, get_template
from tests.templates.replay_calls import rendered, replayed

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_templates"

GPT_OSS = TEMPLATES / "openai-gpt-oss-120b.jinja"


def test_only_gpt_oss_s_template_is_recognised_as_harmony() -> None:
    found = [
        p.stem for p in TEMPLATES.glob("*.jinja") if harmony_source(p.read_text(encoding="utf-8"))
    ]
    assert found == ["openai-gpt-oss-120b"]  # not muse-glimmer's Harmony-like headers


def _gguf(path: Path, arch: str, template: str) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), arch=arch)
    writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("arch", ["llama", "gpt-oss-finetune", "qwen2"])
def test_a_gguf_carrying_gpt_oss_s_template_gets_the_harmony_template(
    tmp_path: Path, arch: str
) -> None:
    info = read_gguf(_gguf(tmp_path / "model.gguf", arch, GPT_OSS.read_text(encoding="utf-8")))
    assert info.metadata["general.architecture"] == arch
    assert default_template_name(info.metadata) == "harmony"
    assert isinstance(get_template("gguf-jinja").for_model(info.metadata), HarmonyTemplate)
    other = read_gguf(
        _gguf(tmp_path / "other.gguf", arch, (TEMPLATES / "muse-glimmer.jinja").read_text())
    )
    assert default_template_name(other.metadata) != "harmony"


def test_replay_reads_gpt_oss_s_jinja_through_the_harmony_parser(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    assert isinstance(template_named(str(GPT_OSS)), HarmonyTemplate)
    assert isinstance(jinja_template(GPT_OSS.read_text(encoding="utf-8")), HarmonyTemplate)
    args = {"city": "Paris", "days": 3}
    texts = rendered(
        GPT_OSS.read_text(encoding="utf-8"),
        [([("get_weather", args)], p) for p in ("", "Let me check.")],
    )
    outs = replayed(GPT_OSS, texts, monkeypatch, capsys)
    for out, thought in zip(outs, ("", "Let me check."), strict=True):
        assert out["shown"] == [
            {"lane": "tool_call", "text": json.dumps(args), "recipient": "functions.get_weather"}
        ]
        assert (out["hidden"]["analysis"], out["errors"], out["stop"]) == (thought, [], "call")


def test_a_gpt_oss_jinja_prompt_is_the_harmony_renderers_own() -> None:
    conversation = Conversation(messages=(Message.of(Role.USER, "Hi"),))
    routed = jinja_template(GPT_OSS.read_text(encoding="utf-8"))
    assert routed.prompt_ids(conversation, ByteTokenizer()) == HarmonyTemplate().prompt_ids(
        conversation, ByteTokenizer()
    )
