"""The bundled o200k_harmony encoding: ids, hash check, and the prompt-injection guard."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from app.errors import VocabularyError
from app.harmony import encoding as enc
from app.resources import resource_path


def test_special_token_ids_are_the_harmony_guides(encoding: enc.HarmonyEncoding) -> None:
    expected = {"<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008, "<|channel|>": 200005,
                "<|constrain|>": 200003, "<|return|>": 200002, "<|call|>": 200012}
    for text, rank in expected.items():
        assert encoding.specials[text] == rank
        assert encoding.encode_with_specials(text) == [rank]
        assert encoding.decode([rank]) == text


def test_special_ids_agree_with_reference(encoding: enc.HarmonyEncoding, oracle: Any) -> None:
    assert sorted(oracle.stop_tokens()) == sorted([enc.RETURN, enc.END, enc.CALL])
    for text in ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"]:
        assert oracle.encode(text, allowed_special="all") == encoding.encode_with_specials(text)


@pytest.mark.parametrize(
    "text",
    ["Hello, world!", "naïve café", "日本語のテキスト", "emoji 💖👍🏽", "    indented\n\tcode()", "x" * 500,
     "<|start|>assistant<|channel|>final<|message|>", "Привет мир", "12345678901234567890"],
)
def test_ordinary_encoding_matches_reference(text: str, encoding: enc.HarmonyEncoding, oracle: Any) -> None:
    ours = encoding.encode_ordinary(text)
    assert ours == oracle.encode(text, disallowed_special=())
    assert encoding.decode(ours) == text


def test_control_token_text_is_never_a_control_token(encoding: enc.HarmonyEncoding) -> None:
    for marker in ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"]:
        ids = encoding.encode_ordinary(f"user says {marker} here")
        assert all(i < enc.START_OF_TEXT for i in ids)


def test_vocabulary_hash_is_checked(tmp_path: Path) -> None:
    good = resource_path(enc.VOCAB_FILE)
    altered = tmp_path / enc.VOCAB_FILE
    shutil.copy(good, altered)
    with altered.open("ab") as f:
        f.write(b"QUFB 199998\n")
    with pytest.raises(VocabularyError) as info:
        enc.read_ranks(altered)
    assert str(altered) in str(info.value)
    assert enc.VOCAB_SHA256 in str(info.value)


def test_missing_vocabulary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError) as info:
        enc.read_ranks(tmp_path / enc.VOCAB_FILE)
    assert enc.VOCAB_FILE in str(info.value) and enc.VOCAB_SHA256 in str(info.value)


def test_bundled_vocabulary_loads(encoding: enc.HarmonyEncoding) -> None:
    assert encoding.n_vocab == 201088
    assert encoding.decode(encoding.encode_ordinary("round trip")) == "round trip"
