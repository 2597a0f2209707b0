"""Tool results as the model reads them: cut to their share of the context, images shown or named.

Guarantees:
- A result — its text, the JSON of its structured content, or its error's message — longer than
  its share of the context is cut, and what the model reads ends with `audit.cut_marker`: how
  many characters were read and how many left out, and the key the whole result is kept under
  in the tool audit (`Answer.said` tells the user the same, with the audit's path). The whole
  outcome is what the audit keeps (`Answer.whole`); the cut one is what the model and the tool
  card read (`Answer.read`). A result that fits is read as it came.
- The share is `1/SHARE` of the loaded model's context, in tokens: a quarter, so that the
  instructions, the tools' declarations, the conversation and the answer's reserve keep the rest
  and a chain of calls holds two or three large results before the overflow policy has to step
  in. It is never more than the room the turn has left (the context less the prompt so far and
  the answer's reserve; under a policy that leaves older messages out, less what it cannot leave
  out: the instructions and this turn), split over a batch's results in call order, what a short
  result leaves going to the next. It is measured with the session's `count` (the model's own
  tokenizer for a model this app runs); a loop driven without a session measures characters
  (`Budget.characters`, `CHAR_SHARE`).
- Images a tool returned (`TextWithImages`) go to a model that sees them — one this app runs,
  loaded with its projector — as images: each is checked (`app.images.decode.read`), held for
  the run (`app.images.kept.remember`) and carried by the tool message after its text, as a
  user's images are; one that cannot be read is named with the reason. To a model that does
  not see them, each is named in a notice the model reads, with the reason.
- The image marker character (U+E0F0) in a tool's text becomes U+FFFD: a tool cannot make a
  place for an image in the prompt.
- A conversation's earlier tool images are found again before a turn reads them
  (`tool_images_found`: this run's memory, else the files kept with the conversations, which a
  frontend that saves its history keeps them among); one found nowhere — its kept file deleted,
  a history from a version that did not keep them — becomes a short note in its tool message
  ("no longer kept on this computer") and a sentence for the user: never a failed turn. A
  user's own images are left as they are (a missing one is the user's to attach again).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.domain.budget import Overflow
from app.domain.events import CallOutcome
from app.domain.messages import (
    IMAGE_MARKER,
    Content,
    Conversation,
    ImageContent,
    Message,
    Role,
    TextContent,
)
from app.engine.session import Session
from app.tools.audit import cut_marker, result_key
from app.tools.result_parts import TextWithImages, image_label

SHARE = 4  # a result may take 1/SHARE of the context
CHAR_SHARE = 32_000  # characters a result may take where no session measures it
MARKER_TOKENS = 96  # kept free for the marker and the notices beside a cut result
PROBE = 8  # characters per token a first look at a long text takes (more than prose has)
READS_TEXT_ONLY = "this model reads text only"
REMOTE_TEXT_ONLY = "an endpoint takes images in a user's message only"


@dataclass(frozen=True)
class Budget:
    """What a turn's tool results may take: `share` and `room` in what `count` measures,
    whether images are shown (`images_refused`: why not, "" when they are) and where whole
    results are kept (`audit`: None where nobody is told)."""

    share: int
    room: int
    count: Callable[[str], int]
    images_refused: str = READS_TEXT_ONLY
    audit: Path | None = None

    @classmethod
    def characters(cls) -> Budget:
        """The fallback of a loop driven without a session: characters, no images."""
        return cls(CHAR_SHARE, 1 << 62, len)


@dataclass(frozen=True)
class Answer:
    """One call's outcome as the model reads it (`read`) and as the tool returned it
    (`whole`), the images its tool message carries, and what the user is told ("" when
    the result was read whole)."""

    read: CallOutcome
    whole: CallOutcome
    images: tuple[ImageContent, ...] = ()
    said: str = ""

    @property
    def call_id(self) -> str:
        return self.read.call_id


def as_is(outcome: CallOutcome) -> Answer:
    """An outcome the model reads as it is (an error the turn itself made)."""
    return Answer(outcome, outcome)


def budget_of(
    session: Session,
    conversation: Conversation,
    reserve: int,
    overflow: Overflow,
    audit: Path | None,
) -> Budget:
    """The budget of the results answering `conversation`'s calls (see the module guarantees)."""
    kept = conversation if overflow is Overflow.STOP else _unavoidable(conversation)
    room = session.n_ctx - session.prompt_size(kept) - reserve
    caps = session.capabilities  # a remote endpoint's tool messages carry text only
    refused = REMOTE_TEXT_ONLY if caps.images else READS_TEXT_ONLY
    if caps.images and caps.vocabulary:
        refused = ""
    return Budget(session.n_ctx // SHARE, room, session.count, refused, audit)


def _unavoidable(conversation: Conversation) -> Conversation:
    """What a policy that leaves older messages out keeps: the instructions and this turn."""
    messages = conversation.messages
    users = [i for i, m in enumerate(messages) if m.author.role is Role.USER]
    start = users[-1] if users else 0
    headers = [m for m in messages[:start] if m.author.role in (Role.SYSTEM, Role.DEVELOPER)]
    return Conversation(messages=(*headers, *messages[start:]))


def answers(outcomes: Sequence[CallOutcome], budget: Budget, tools: dict[str, str]) -> list[Answer]:
    """Each outcome as the model reads it, in order (see the module guarantees); `tools`:
    each call's tool, by call id, for what the user is told."""
    out: list[Answer] = []
    room = budget.room
    for i, outcome in enumerate(outcomes):
        limit = min(budget.share, max(0, room) // (len(outcomes) - i)) - MARKER_TOKENS
        answer, used = _answer(outcome, budget, max(0, limit), tools.get(outcome.call_id, ""))
        out.append(answer)
        room -= used + MARKER_TOKENS
    return out


def _body(outcome: CallOutcome) -> str:
    if not outcome.ok:
        return outcome.error or ""
    content = outcome.content
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _answer(outcome: CallOutcome, budget: Budget, limit: int, tool: str) -> tuple[Answer, int]:
    """One outcome read within `limit`, and what it takes of the room."""
    body = _body(outcome)
    clean = body.replace(IMAGE_MARKER, "\ufffd")
    kept, used = fit(clean, limit, budget.count)
    images, notes = _images(outcome.content, budget) if outcome.ok else ((), [])
    if kept == len(clean) and clean == body and not notes:
        content = str(outcome.content) if images else outcome.content
        read = dataclasses.replace(outcome, content=content) if outcome.ok else outcome
        return Answer(read, outcome, images), used
    said = marker = ""
    if kept < len(clean):
        key = result_key(outcome.content if outcome.ok else outcome.error)
        marker = cut_marker(kept, len(clean), key)
        said = _said(tool, len(clean), kept, limit, key, budget)
    text = clean[:kept] + "".join(notes) + marker
    if outcome.ok:
        read = dataclasses.replace(outcome, content=text)
    else:
        read = dataclasses.replace(outcome, error=text)
    return Answer(read, outcome, images, said), used


def _said(tool: str, total: int, kept: int, limit: int, key: str, budget: Budget) -> str:
    where = f"the tool audit, {budget.audit}" if budget.audit else "the tool audit"
    return (
        f"The result of {tool or 'a tool'} ({total:,} characters) was past its share of the"
        f" context ({limit:,} tokens): the model read its first {kept:,} characters. The whole"
        f" result is kept in {where}, as result {key} (`harmony-desk tools audit` exports it)."
    )


def fit(text: str, limit: int, count: Callable[[str], int]) -> tuple[int, int]:
    """(characters, what `count` makes of them) of the longest start of `text` found within
    `limit` — all of it when it fits — cut after a line where one ends near the cut. Only a
    few starts are measured, none much longer than what fits: a text of megabytes is not
    measured whole."""
    if limit <= 0 or not text:
        return 0, 0
    end = min(len(text), limit * PROBE)
    used = count(text[:end])
    while used <= limit and end < len(text):  # long tokens: look further
        end = min(len(text), end * 4)
        used = count(text[:end])
    while used > limit:
        end = min(end - 1, int(end * limit / used * 0.97))
        used = count(text[:end]) if end > 0 else 0
    if end < len(text):
        line = text.rfind("\n", end - end // 10, end)
        end = line + 1 if line > 0 else end
    return end, used


def _images(content: Any, budget: Budget) -> tuple[tuple[ImageContent, ...], list[str]]:
    """The images the tool message carries, and the notices the model reads of the others."""
    if not isinstance(content, TextWithImages) or not content.images:
        return (), []
    if budget.images_refused:
        return (), [
            f"\n{image_label(n, i)[:-1]} left out: {budget.images_refused}]"
            for n, i in enumerate(content.images, 1)
        ]
    from app.images.decode import ImageError, read
    from app.images.kept import remember

    shown: list[ImageContent] = []
    notes: list[str] = []
    for n, image in enumerate(content.images, 1):
        try:
            picture = read(image.data, image.name.rsplit("/", 1)[-1] or f"tool image {n}")
        except ImageError as exc:
            notes.append(f"\n[image {n} could not be shown: {exc.message}]")
            continue
        remember(picture)
        shown.append(picture.content())
    return tuple(shown), notes


def tool_images_found(conversation: Conversation) -> tuple[Conversation, list[str]]:
    """`conversation` with each image a tool returned that is no longer kept anywhere here
    replaced by a note in its tool message, and a sentence for the user per image replaced
    (see the module guarantees); the same conversation when every one is found."""
    found: dict[str, bool] = {}  # by sha256: each image looked for once
    said: list[str] = []
    messages = [
        _noted(m, found, said) if m.author.role is Role.TOOL and m.images else m
        for m in conversation.messages
    ]
    if not said:
        return conversation, []
    return conversation.model_copy(update={"messages": tuple(messages)}), said


def _noted(message: Message, found: dict[str, bool], said: list[str]) -> Message:
    """A tool message with a note in place of each of its images found nowhere here."""
    from app.images.kept import find

    content: list[Content] = []
    for part in message.content:
        if isinstance(part, ImageContent):
            if part.sha256 not in found:
                found[part.sha256] = find(part.sha256, part.name) is not None
            if not found[part.sha256]:
                name = (part.name or "an image").replace(IMAGE_MARKER, "\ufffd")
                said.append(
                    f"{name}, an image {message.author.name or 'a tool'} returned earlier in"
                    " this conversation, is no longer kept on this computer: the model reads a"
                    " note in its place."
                )
                part = TextContent(text=f"\n[{name}: no longer kept on this computer]")
        content.append(part)
    return message.model_copy(update={"content": tuple(content)})


__all__ = ["Answer", "Budget", "answers", "as_is", "budget_of", "fit", "tool_images_found"]
