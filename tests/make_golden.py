"""Regenerate tests/golden/ from openai-harmony (run by hand: `python -m tests.make_golden`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from app.resources import resources_dir

os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(resources_dir()))

GOLDEN = Path(__file__).parent / "golden"


def main() -> None:
    import openai_harmony as oh

    from tests.fixed_conversations import fixed_conversations
    from tests.oracle import MODES, reference_render

    oracle = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    GOLDEN.mkdir(exist_ok=True)
    for name, conversation in fixed_conversations().items():
        rendered = {}
        for mode in MODES:
            for keep in (False, True):
                tokens = reference_render(oracle, conversation, mode, keep)
                rendered[f"{mode.value}{'+keep' if keep else ''}"] = {
                    "tokens": tokens,
                    "text": oracle.decode(tokens),
                }
        payload = {"conversation": conversation.to_dict(), "rendered": rendered}
        (GOLDEN / f"{name}.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
