"""A conversation compacted: its older exchanges stand in the prompt as a summary, while every
message stays where it was.

Guarantees: a `Compaction` is an overlay, never an edit — it names how many messages after the
header it stands for (`covered`, whole exchanges: a user message and all that followed it) and
a fingerprint of exactly those messages, so it applies (`compacted`) only to a conversation
that still starts with them (an edited or branched earlier message makes it not apply, and the
whole conversation is sent as it is); undoing it is dropping it, which gives back the exact
conversation it was made on. The prompt it makes keeps the header (instructions and tools)
first, then the summary, folded in front of the first exchange kept verbatim (so no template
sees two user messages in a row, and every later turn's prompt starts with the same tokens),
then the kept exchanges as they are. A later compaction covers more of the same conversation
and carries the summary forward (`covered` grows, the summary is rewritten once, not each
turn). `to_dict` / `from_dict` keep it in the store and in exports; a malformed record is an
`InvalidInputError`. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from app.domain.instructions import INSTRUCTION_ROLES
from app.domain.messages import Conversation, Message, Role, TextContent
from app.errors import InvalidInputError

HEADER_ROLES = INSTRUCTION_ROLES
SUMMARY_OPENS = "[Summary of the earlier conversation, written when it was compacted]"
SUMMARY_CLOSES = "[End of the summary; the conversation continues]"


@dataclass(frozen=True)
class Compaction:
    """See the module guarantees: the summary, what it stands for, and what it saved."""

    summary: str
    covered: int  # messages after the header the summary stands for
    fingerprint: str  # of those messages (`fingerprint`)
    exchanges: int  # the exchanges among them
    tokens_before: int  # the prompt's tokens before the compaction
    tokens_after: int  # and after it
    created: float = 0.0

    def said(self) -> str:
        """`12 exchanges summarised, 9,400 → 610 tokens`: the transcript's marker."""
        plural = "" if self.exchanges == 1 else "s"
        return (
            f"{self.exchanges} exchange{plural} summarised,"
            f" {self.tokens_before:,} → {self.tokens_after:,} tokens"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> Compaction:
        if not isinstance(data, Mapping):
            raise InvalidInputError("a compaction is an object")
        try:
            made = cls(
                summary=str(data["summary"]),
                covered=int(data["covered"]),
                fingerprint=str(data["fingerprint"]),
                exchanges=int(data["exchanges"]),
                tokens_before=int(data["tokens_before"]),
                tokens_after=int(data["tokens_after"]),
                created=float(data.get("created", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"a compaction record is malformed ({exc})") from None
        if made.covered < 1 or made.exchanges < 1:
            raise InvalidInputError("a compaction must cover at least one exchange")
        return made


class Marked(Protocol):
    """A reply's segment: where a compaction's record is kept (`data["compaction"]`), and the
    marker's text."""

    data: dict[str, Any]
    text: str

    @property
    def kind(self) -> str: ...


def recorded(segments: Iterable[Marked]) -> Compaction | None:
    """The last compaction recorded among `segments` (a malformed record is passed over)."""
    found = None
    for segment in segments:
        if "compaction" in segment.data:
            try:
                found = Compaction.from_dict(segment.data["compaction"])
            except InvalidInputError:
                continue
    return found


def record_of(segment: Marked) -> tuple[Compaction, bool] | None:
    """The compaction a notice segment records (`data["compaction"]`, or `data["undone"]` once
    undone) and whether it applies; None for any other segment, or a malformed record."""
    for key in ("compaction", "undone"):
        if segment.kind == "notice" and key in segment.data:
            try:
                return Compaction.from_dict(segment.data[key]), key == "compaction"
            except InvalidInputError:
                return None
    return None


def undo(latest_first: Iterable[Marked]) -> Compaction | None:
    """Undo the first compaction recorded among `latest_first` (segments, the latest first):
    its record leaves the segment (kept as `undone`, for the export and the debug pane) and
    the marker says it was undone; what was undone (None: there was none)."""
    for segment in latest_first:
        made = recorded([segment])
        if made is not None:
            del segment.data["compaction"]
            segment.data["undone"] = made.to_dict()
            segment.text = f"Compaction undone ({made.said()}): the model reads them all again."
            return made
    return None


def header_of(conversation: Conversation) -> list[Message]:
    """The leading system and developer messages."""
    head = []
    for m in conversation.messages:
        if m.author.role not in HEADER_ROLES:
            break
        head.append(m)
    return head


def exchanges_of(conversation: Conversation) -> list[list[Message]]:
    """The messages after the header, one list per user message and what followed it."""
    out: list[list[Message]] = []
    for m in conversation.messages[len(header_of(conversation)) :]:
        if m.author.role is Role.USER or not out:
            out.append([m])
        else:
            out[-1].append(m)
    return out


def fingerprint(messages: Sequence[Message]) -> str:
    """A digest of `messages` as they are (their JSON form)."""
    body = json.dumps([m.to_dict() for m in messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def applies(conversation: Conversation, compaction: Compaction) -> bool:
    """Whether `conversation` still starts (after its header) with what `compaction` covers,
    and has an exchange after it."""
    rest = conversation.messages[len(header_of(conversation)) :]
    if len(rest) <= compaction.covered or rest[compaction.covered].author.role is not Role.USER:
        return False
    return fingerprint(rest[: compaction.covered]) == compaction.fingerprint


def folded(summary: str, message: Message) -> Message:
    """`message` (a user message) with the summary in front of what it says."""
    said = f"{SUMMARY_OPENS}\n{summary.strip()}\n{SUMMARY_CLOSES}\n\n"
    return message.model_copy(update={"content": (TextContent(text=said), *message.content)})


def compacted(conversation: Conversation, compaction: Compaction | None) -> Conversation:
    """The prompt's conversation: `conversation` with what `compaction` covers replaced by its
    summary (see the module guarantees); `conversation` itself when it does not apply."""
    if compaction is None or not applies(conversation, compaction):
        return conversation
    head = header_of(conversation)
    rest = conversation.messages[len(head) :]
    kept = rest[compaction.covered :]
    first = folded(compaction.summary, kept[0])
    return Conversation(messages=(*head, first, *kept[1:]))


__all__ = [
    "SUMMARY_CLOSES",
    "SUMMARY_OPENS",
    "Compaction",
    "applies",
    "compacted",
    "exchanges_of",
    "fingerprint",
    "folded",
    "header_of",
    "record_of",
    "recorded",
    "undo",
]
