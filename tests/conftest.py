"""Shared fixtures: our encoding, renderer, and openai-harmony as the oracle.

openai-harmony reads the o200k vocabulary from the folder named by
TIKTOKEN_ENCODINGS_BASE; we point it at the bundled `resources/` so nothing is downloaded.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from app.harmony.encoding import HarmonyEncoding, load_encoding
from app.harmony.renderer import Renderer
from app.resources import resources_dir

os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(resources_dir())


@pytest.fixture(scope="session")
def encoding() -> HarmonyEncoding:
    return load_encoding()


@pytest.fixture(scope="session")
def renderer(encoding: HarmonyEncoding) -> Renderer:
    return Renderer(encoding)


@pytest.fixture(scope="session")
def oracle() -> Any:
    import openai_harmony as oh

    return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
