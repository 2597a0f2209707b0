"""Instructions a client gives after its conversation has begun, and their gathering for a
format that has no place for them.

Guarantees: the header is the leading run of system and developer messages; a later
instruction is a system or developer message after the first other message. `gathered` is
the conversation with its later instructions moved, in their order, to the end of the
header's developer instructions (a developer message is added after the system message when
the header has none), every other message kept in its order; a conversation without later
instructions is returned as it is (the same object). `turn_text` is what a plain-text format
writes for a message: the instructions a developer message carries, else its text.
"""

from __future__ import annotations

from app.domain.messages import Conversation, DeveloperContent, Message, Role

INSTRUCTION_ROLES = (Role.SYSTEM, Role.DEVELOPER)


def turn_text(message: Message) -> str:
    """The instructions a developer message carries, else the message's text."""
    found = [c.instructions for c in message.content if isinstance(c, DeveloperContent)]
    return "".join(i for i in found if i) or message.text


def header_length(conversation: Conversation) -> int:
    """How many messages the header holds."""
    for i, m in enumerate(conversation.messages):
        if m.author.role not in INSTRUCTION_ROLES:
            return i
    return len(conversation.messages)


def later_instructions(conversation: Conversation) -> list[Message]:
    """The instructions given after the conversation began, in order."""
    rest = conversation.messages[header_length(conversation) :]
    return [m for m in rest if m.author.role in INSTRUCTION_ROLES]


def gathered(conversation: Conversation) -> Conversation:
    """The conversation with its later instructions moved into the header (see the module
    guarantees)."""
    later = later_instructions(conversation)
    if not later:
        return conversation
    head = header_length(conversation)
    kept = Conversation(
        messages=tuple(m for m in conversation.messages if not any(m is x for x in later))
    )
    texts = [t for m in later if (t := turn_text(m))]
    if not texts:
        return kept
    before = next(
        (
            c.instructions
            for m in kept.messages[:head]
            if m.author.role is Role.DEVELOPER
            for c in m.content
            if isinstance(c, DeveloperContent)
        ),
        None,
    )
    joined = "\n\n".join(t for t in (before, *texts) if t)
    return kept.with_header(Role.DEVELOPER, instructions=joined)


__all__ = ["INSTRUCTION_ROLES", "gathered", "header_length", "later_instructions", "turn_text"]
