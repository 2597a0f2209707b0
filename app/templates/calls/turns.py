"""The turns of a conversation with tools, for a plain-text template with a call format.

Guarantees: `call_turns` gives None when the conversation neither declares a tool nor holds a
call or a result (the template writes its plain turns); else every turn as (role, pieces): the
system text (the opening system and developer instructions, then the format's declaration of
the tools) first, an instruction given later a system turn in its place, an assistant's text
and the calls that follow it in one assistant turn (calls after the text, on a line of their
own), each result in the format's result turn (results in a row share one where the format
says so, a separator between them). Call arguments and results
are content pieces, never markup. Nothing of the conversation is dropped but what the format
has no place for: hidden reasoning.
"""

from __future__ import annotations

from collections.abc import Callable

from app.domain.instructions import header_length, turn_text
from app.domain.messages import Conversation, Message, Role, ToolDescription
from app.templates.calls.format import (
    CallFormat,
    Piece,
    ToolCall,
    calls_in,
    declared_tools,
    name_of,
)

_Turn = tuple[str, list[Piece], list[ToolCall]]  # role, its pieces, the calls it makes
Declare = Callable[[CallFormat, list[ToolDescription], str], tuple[str, str]]


def is_system(m: Message) -> bool:
    """Whether `m` is instructions (a system or developer message)."""
    return m.author.role in (Role.SYSTEM, Role.DEVELOPER)


def in_system_turn(
    fmt: CallFormat, tools: list[ToolDescription], instructions: str
) -> tuple[str, str]:
    """Where most families declare tools: (the system turn's text: the instructions, then the
    declaration; nothing leading the first user turn)."""
    return "\n\n".join(t for t in (instructions, fmt.declare(tools)) if t), ""


def call_turns(
    fmt: CallFormat, conversation: Conversation, declare: Declare = in_system_turn
) -> list[tuple[str, list[Piece]]] | None:
    """The turns (see the module guarantees); None for a conversation without tools.
    `declare` says where the declaration goes: (system text, text leading the first user turn)."""
    tools = declared_tools(conversation)
    has_calls = any(
        calls_in(m) is not None or m.author.role is Role.TOOL for m in conversation.messages
    )
    if not tools and not has_calls:
        return None
    turns: list[_Turn] = []
    head = header_length(conversation)
    lead = "\n\n".join(t for m in conversation.messages[:head] if (t := turn_text(m)))
    user_lead = ""
    if tools:
        lead, user_lead = declare(fmt, tools, lead)
    if lead:
        turns.append(("system", [Piece(lead)], []))
    for m in conversation.messages[head:]:
        _add(turns, fmt, m)
    if user_lead:
        _lead_first_user(turns, user_lead)
    gap = [Piece("\n", True)]
    return [
        (name, [*body, *(gap if body else []), *fmt.write(calls)] if calls else body)
        for name, body, calls in turns
    ]


def _add(turns: list[_Turn], fmt: CallFormat, m: Message) -> None:
    """`m` written into `turns`: a call joins the assistant's turn, a result the format's
    result turn, a later instruction is a system turn, a visible message a turn of its own."""
    role, call = m.author.role, calls_in(m)
    if call is not None:
        if not turns or turns[-1][0] != "assistant":
            turns.append(("assistant", [], []))
        turns[-1][2].append(call)
    elif role is Role.TOOL:
        pieces = fmt.result(name_of(m.author.name or ""), m.text)
        if turns and turns[-1][0] == fmt.result_role and fmt.results_together:
            turns[-1][1].extend([Piece(fmt.separator, True), *pieces])
        else:
            turns.append((fmt.result_role, pieces, []))
    elif is_system(m):
        if text := turn_text(m):
            turns.append(("system", [Piece(text)], []))
    elif m.channel in (None, "final"):
        if role is Role.ASSISTANT and turns and turns[-1][0] == "assistant":
            turns[-1][1].append(Piece(m.text))
        else:
            turns.append((role.value, [Piece(turn_text(m))], []))


def _lead_first_user(turns: list[_Turn], text: str) -> None:
    """Put `text` at the head of the first user turn (one is made after the system turn)."""
    first = next((t for t in turns if t[0] == "user"), None)
    if first is None:
        at = int(bool(turns) and turns[0][0] == "system")
        turns.insert(at, ("user", [], []))
        first = turns[at]
    first[1].insert(0, Piece(text))
