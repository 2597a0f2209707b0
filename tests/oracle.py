"""Helpers that ask openai-harmony (the reference, a test-only dependency) for its answers."""

from __future__ import annotations

import json
from typing import Any

from app.domain.messages import Conversation
from app.harmony.renderer import RenderMode

MODES = [RenderMode.COMPLETION, RenderMode.PLAIN, RenderMode.TRAINING]


def reference_render(
    oracle: Any, conversation: Conversation, mode: RenderMode, keep_analysis: bool = False
) -> list[int]:
    """The reference's ids for our conversation, passed through its own JSON reader."""
    import openai_harmony as oh

    conv = oh.Conversation.from_json(json.dumps(conversation.to_dict()))
    config = oh.RenderConversationConfig(auto_drop_analysis=not keep_analysis)
    if mode is RenderMode.COMPLETION:
        return list(oracle.render_conversation_for_completion(conv, oh.Role.ASSISTANT, config))
    if mode is RenderMode.PLAIN:
        return list(oracle.render_conversation(conv, config))
    return list(oracle.render_conversation_for_training(conv, config))


def reference_parse(
    oracle: Any, tokens: list[int], role: str | None = "assistant"
) -> list[dict[str, Any]] | str:
    """The reference's strict parse as JSON dicts, or its error text. Id 200018 is named as
    the app names it (`<|endofprompt|>`, o200k_base's name: `app/harmony/encoding.py`
    `special_tokens`), where the reference calls it `<|reserved_200018|>`: the one naming the
    two differ on, by choice, not a parse."""
    try:
        raw = oracle._inner.parse_messages_from_completion_tokens(tokens, role, True)
    except Exception as exc:  # the reference raises its own error type
        return str(exc)
    return json.loads(raw.replace("<|reserved_200018|>", "<|endofprompt|>"))  # type: ignore[no-any-return]


def wire_form(message: dict[str, Any]) -> dict[str, Any]:
    """A message dict in the reference's compact wire form (for comparisons)."""
    out = {k: v for k, v in message.items() if v is not None and k != "content"}
    content = message["content"]
    if isinstance(content, list):
        texts = [c["text"] for c in content if c.get("type") == "text"]
        content = "".join(texts)
    out["content"] = content
    return out
