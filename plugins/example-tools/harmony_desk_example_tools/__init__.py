"""An example Harmony Desk tool plugin: it imports only `app.tools.api`, like every plugin."""

from __future__ import annotations

from app.tools.api import Risk, hookimpl, tool


@tool(risk=Risk.READ_ONLY)
def word_count(text: str) -> dict[str, int]:
    """Count the words and characters of a text."""
    return {"words": len(text.split()), "characters": len(text)}


@tool(risk=Risk.READ_ONLY)
def reverse_text(text: str) -> str:
    """Reverse a text, character by character."""
    return text[::-1]


@hookimpl
def harmony_desk_tools() -> list[object]:
    return [word_count, reverse_text]
