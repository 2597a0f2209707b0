"""The turns of a conversation with tools, for a plain-text template with a call format.

Guarantees: `call_turns` gives None when the conversation neither declares a tool nor holds a
call or a result (the template writes its plain turns); else every turn as (role, pieces): the
system text (every system and developer instruction, then the format's declaration of the
tools) first, an assistant's text and the calls that follow it in one assistant turn (calls
after the text, on a line of their own), each result in the format's result turn (results in a
row share one where the format says so). Call arguments and results are content pieces, never
markup. Nothing of the conversation is dropped but what the format has no place for: hidden
reasoning.
"""

from __future__ import annotations

from app.domain.messages import Conversation, Message, Role
from app.templates.calls.format import (
    CallFormat,
    Piece,
    ToolCall,
    calls_in,
    declared_tools,
    name_of,
)


def _is_system(m: Message) -> bool:
    return m.author.role in (Role.SYSTEM, Role.DEVELOPER)


def _text(m: Message) -> str:
    """A message's text, or the instructions a system or developer message carries."""
    found = [getattr(c, "instructions", None) for c in m.content]
    return "".join(i for i in found if isinstance(i, str)) or m.text


def call_turns(fmt: CallFormat, conversation: Conversation) -> list[tuple[str, list[Piece]]] | None:
    """The turns (see the module guarantees); None for a conversation without tools."""
    tools = declared_tools(conversation)
    has_calls = any(
        calls_in(m) is not None or m.author.role is Role.TOOL for m in conversation.messages
    )
    if not tools and not has_calls:
        return None
    turns: list[tuple[str, list[Piece], list[ToolCall]]] = []
    lead = "\n\n".join(t for t in (_text(m) for m in conversation.messages if _is_system(m)) if t)
    if tools:
        lead = (lead + "\n\n" if lead else "") + fmt.declare(tools)
    if lead:
        turns.append(("system", [Piece(lead)], []))
    for m in conversation.messages:
        role, call = m.author.role, calls_in(m)
        if call is not None:
            if not turns or turns[-1][0] != "assistant":
                turns.append(("assistant", [], []))
            turns[-1][2].append(call)
        elif role is Role.TOOL:
            pieces = fmt.result(name_of(m.author.name or ""), m.text)
            if turns and turns[-1][0] == fmt.result_role and fmt.results_together:
                turns[-1][1].extend(pieces)
            else:
                turns.append((fmt.result_role, pieces, []))
        elif m.channel in (None, "final") and not _is_system(m):
            if role is Role.ASSISTANT and turns and turns[-1][0] == "assistant":
                turns[-1][1].append(Piece(m.text))
            else:
                turns.append((role.value, [Piece(_text(m))], []))
    gap = [Piece("\n", True)]
    return [
        (name, [*body, *(gap if body else []), *fmt.write(calls)] if calls else body)
        for name, body, calls in turns
    ]
