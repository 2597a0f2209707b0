"""What a conversation holds for the window: turns, their alternative replies, what each shows.

Guarantees:
- a turn keeps every version of itself: regenerating adds a version (the old reply stays and can
  be flipped back to), editing the user message adds a version that starts a new branch, and
  the later turns of the branch that was left are kept with it and come back when it is chosen;
- a reply's `segments` are what the transcript shows (answer, preambles, tool cards, JSON
  verdicts, errors) and never hold analysis; analysis, the prompt, raw tokens and parser
  events live in the reply's `debug` record, which only the debug pane reads;
- `messages()` rebuilds the model conversation from the chosen versions, so the next prompt is
  exactly the history the user sees;
- the in-memory `ConversationList` (new, rename, delete with undo, pin, search over titles and
  visible text) has the interface the SQLite store will implement; a conversation found by a
  search is listed with `found`, the excerpt around the match (from what the user wrote or a
  visible reply, else the title, else an attached document's text marked 📎 — never analysis).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from app.domain import attachments
from app.domain.budget import Overflow
from app.domain.compaction import Compaction, recorded, undo
from app.domain.listing import Excerpt, attached_excerpt, excerpt
from app.domain.messages import (
    DeveloperContent,
    ImageContent,
    Message,
    ReasoningEffort,
    Role,
    user_message,
)
from app.errors import ErrorCode

SegmentKind = Literal["answer", "preamble", "tool", "json", "error", "notice"]


@dataclass
class Segment:
    """One visible block of a reply."""

    kind: SegmentKind
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)  # tool card and JSON verdict details
    complete: bool = False


@dataclass
class DebugRecord:
    """What the debug pane shows for one reply; never copied into the transcript."""

    analysis: str = ""
    prompt_ids: tuple[int, ...] = ()
    token_ids: list[int] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    sampling: str = ""
    stop_reason: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    generation_start: int = 0  # where the last generation's ids begin in `token_ids`
    generation_messages: int = 0  # how many messages the last generation produced
    # (token, log-probability, [(alternative, log-probability), ...]) per scored token
    token_scores: list[tuple[int, float, tuple[tuple[int, float], ...]]] = field(
        default_factory=list
    )
    # the turn as it ran, ms from its start: ("prompt"|"decode"|"tool NAME", start, end) spans,
    # and each scored token's arrival (the debug pane's timeline)
    spans: list[tuple[str, float, float]] = field(default_factory=list)
    # a remote endpoint's tokens, as text: (token, log-probability, alternatives)
    text_scores: list[tuple[str, float, tuple[tuple[str, float], ...]]] = field(
        default_factory=list
    )
    token_times: list[float] = field(default_factory=list)
    budget: dict[str, int] = field(default_factory=dict)  # the last prompt's (`Budget.to_dict`)


class StoredParts(Protocol):
    """What a stored reply reads only when asked: its model messages and its debug record."""

    def messages(self) -> tuple[Message, ...]: ...

    def debug(self) -> DebugRecord: ...


@dataclass
class Reply:
    """One assistant reply: what it shows, the messages it added, and its debug record.

    A reply loaded from the store reads its messages and its debug record on first use
    (`stored`), so opening a long conversation decodes only what the transcript shows."""

    segments: list[Segment] = field(default_factory=list)
    state: Literal["streaming", "done", "stopped", "failed", "incomplete"] = "streaming"
    error: str = ""
    model: str = ""
    # the last generation's parser message index → segment index (to continue it)
    open_segments: dict[int, int] = field(default_factory=dict)
    id: str = field(default_factory=lambda: _new_id("reply"))
    stored: StoredParts | None = field(default=None, repr=False, compare=False)
    _messages: tuple[Message, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _debug: DebugRecord | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def messages(self) -> tuple[Message, ...]:
        if self._messages is None:
            self._messages = self.stored.messages() if self.stored is not None else ()
        return self._messages

    @messages.setter
    def messages(self, messages: tuple[Message, ...]) -> None:
        self._messages = messages

    @property
    def debug(self) -> DebugRecord:
        if self._debug is None:
            self._debug = self.stored.debug() if self.stored is not None else DebugRecord()
        return self._debug

    @debug.setter
    def debug(self, record: DebugRecord) -> None:
        self._debug = record

    @property
    def debug_loaded(self) -> bool:
        """Whether `debug` is in memory (reading it then never touches the store)."""
        return self._debug is not None or self.stored is None

    @property
    def continuable(self) -> bool:
        """Whether Continue can go on from it: it stopped, failed or was cut, and not because
        the conversation outgrew the context (continuing would fail the same way), nor where it
        ends in a JSON answer found whole and valid (a constraint that closed the value ends
        the answer: there is nothing to go on with)."""
        outgrew = self.error.startswith(ErrorCode.CONTEXT.value)
        whole = bool(self.segments) and self.segments[-1].kind == "json"
        whole = whole and self.segments[-1].data.get("valid") is True
        return self.state in ("stopped", "failed", "incomplete") and not outgrew and not whole

    def visible_text(self) -> str:
        """The reply as a normal copy action gives it: answers and preambles only."""
        return "\n\n".join(
            s.text for s in self.segments if s.kind in ("answer", "preamble", "json")
        )


@dataclass
class Version:
    """One version of a turn: its user text, its replies (regenerations), the branch after it."""

    user_text: str
    effort: ReasoningEffort | None = None
    json_schema: dict[str, Any] | None = None
    replies: list[Reply] = field(default_factory=list)
    chosen: int = 0
    following: list[Turn] = field(default_factory=list)  # later turns, while not on this branch
    id: str = field(default_factory=lambda: _new_id("version"))
    images: tuple[ImageContent, ...] = ()  # shown to the model before `user_text`

    @property
    def reply(self) -> Reply | None:
        return self.replies[self.chosen] if self.replies else None


@dataclass
class Turn:
    versions: list[Version]
    chosen: int = 0
    id: str = field(default_factory=lambda: _new_id("turn"))

    @property
    def version(self) -> Version:
        return self.versions[self.chosen]


def _segments(turn: Turn) -> list[Segment]:
    reply = turn.version.reply
    return reply.segments if reply is not None else []


def snippet(text: str, needle: str, width: int = 40) -> str | None:
    """`text` around the first case-insensitive match of `needle`, or None without one."""
    at = text.lower().find(needle.lower())
    if at < 0 or not needle:
        return None
    start, end = max(0, at - width), min(len(text), at + len(needle) + width)
    return (
        ("…" if start else "")
        + text[start:end].replace("\n", " ")
        + ("…" if end < len(text) else "")
    )


def _new_id(kind: str = "chat") -> str:
    """A fresh id: made here, not by the store, so saving never has to hand one back."""
    return f"{kind}-{uuid.uuid4().hex[:16]}"


def instructions_header(instructions: str) -> list[Message]:
    """The messages before a conversation's history: its instructions, if any."""
    if not instructions.strip():
        return []
    return [Message.of(Role.DEVELOPER, DeveloperContent(instructions=instructions))]


@dataclass
class ChatDoc:
    """One conversation as the window holds it."""

    title: str = "New chat"
    id: str = field(default_factory=_new_id)
    pinned: bool = False
    instructions: str = ""
    tools: tuple[str, ...] = ()
    offline: bool = False
    library: bool = False  # each message also carries the documents library's best passages
    endpoint: str | None = None  # a remote endpoint's name; None: the model on this computer
    overflow: Overflow | None = None  # once it outgrows the context; None: as the settings say
    turns: list[Turn] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    # a listing's search result: the excerpt around the match (empty when not searched)
    found: Excerpt = field(default=(), compare=False, repr=False)

    def messages(self, upto: int | None = None) -> list[Message]:
        """The model conversation after the system/developer header, from the chosen versions
        (of the turns before `upto` when given)."""

        out: list[Message] = []
        for turn in self.turns[:upto]:
            version = turn.version
            out.append(user_message(version.user_text, version.images))
            if version.reply is not None:
                out.extend(version.reply.messages)
        return out

    def prompt_messages(self, upto: int | None = None) -> list[Message]:
        """What a turn answers after: the conversation's instructions (a developer message,
        when it has any), then `messages(upto)`."""
        return instructions_header(self.instructions) + self.messages(upto)

    def compaction(self, upto: int | None = None) -> Compaction | None:
        """The latest compaction recorded on the replies of the turns before `upto` (None:
        all), on the branch chosen; undone ones are gone from their replies."""
        return recorded(s for t in self.turns[:upto] for s in _segments(t))

    def undo_compaction(self) -> Compaction | None:
        """Undo the latest compaction on the chosen branch (`compaction.undo`): the next turn
        sends every message again; what was undone (None: there was none)."""
        return undo(s for t in reversed(self.turns) for s in reversed(_segments(t)))

    def visible_text(self) -> str:
        parts = [self.title]
        for turn in self.turns:
            parts.append(turn.version.user_text)
            if turn.version.reply is not None:
                parts.append(turn.version.reply.visible_text())
        return "\n".join(parts)

    def edit(self, index: int, text: str) -> Version:
        """A new version of turn `index` with `text`; the later turns stay with the old one."""
        turn = self.turns[index]
        turn.version.following = self.turns[index + 1 :]
        del self.turns[index + 1 :]
        old = turn.version
        turn.versions.append(Version(text, old.effort, old.json_schema))
        turn.chosen = len(turn.versions) - 1
        return turn.version

    def choose_version(self, index: int, chosen: int) -> None:
        """Flip turn `index` to another version, bringing back that branch's later turns."""
        turn = self.turns[index]
        if not 0 <= chosen < len(turn.versions) or chosen == turn.chosen:
            return
        turn.version.following = self.turns[index + 1 :]
        del self.turns[index + 1 :]
        turn.chosen = chosen
        self.turns.extend(turn.version.following)
        turn.version.following = []


class ConversationList:
    """The conversations in memory: new, rename, delete with undo, pin, search."""

    def __init__(self) -> None:
        self._docs: list[ChatDoc] = []
        self._trash: list[tuple[int, ChatDoc]] = []

    def new(self, title: str = "New chat") -> ChatDoc:
        doc = ChatDoc(title=title)
        self.save(doc)
        return doc

    def save(self, doc: ChatDoc) -> None:
        """Keep `doc` (newest first); it is the live object, so later changes need no save."""
        if self.get(doc.id) is None:
            self._docs.insert(0, doc)

    def get(self, doc_id: str) -> ChatDoc | None:
        return next((d for d in self._docs if d.id == doc_id), None)

    def rename(self, doc_id: str, title: str) -> None:
        doc = self.get(doc_id)
        if doc is not None and title.strip():
            doc.title = title.strip()

    def pin(self, doc_id: str, pinned: bool = True) -> None:
        doc = self.get(doc_id)
        if doc is not None:
            doc.pinned = pinned

    def delete(self, doc_id: str) -> None:
        doc = self.get(doc_id)
        if doc is not None:
            index = self._docs.index(doc)
            self._trash.append((index, doc))
            self._docs.remove(doc)

    def undo_delete(self) -> ChatDoc | None:
        if not self._trash:
            return None
        index, doc = self._trash.pop()
        self._docs.insert(min(index, len(self._docs)), doc)
        return doc

    def trash(self) -> list[tuple[str, str, float]]:
        """(id, title, when deleted) of the conversations in the trash, newest first."""
        return [(d.id, d.title, 0.0) for _, d in reversed(self._trash)]

    def restore(self, doc_id: str) -> None:
        for entry in list(self._trash):
            if entry[1].id == doc_id:
                self._trash.remove(entry)
                self._docs.insert(min(entry[0], len(self._docs)), entry[1])

    def purge(self, doc_id: str | None = None, *, older_than_days: float | None = None) -> int:
        """Forget trashed conversations: one, or all of them."""
        gone = [e for e in self._trash if doc_id is None or e[1].id == doc_id]
        for entry in gone:
            self._trash.remove(entry)
        return len(gone)

    def all_ids(self) -> set[str]:
        """Every conversation kept, the trashed ones included."""
        return {d.id for d in self._docs} | {d.id for _, d in self._trash}

    def listed(self, search: str = "") -> list[ChatDoc]:
        """Pinned first, then newest first; with `search`, only those whose title or visible
        text match, each a copy with `found`, the excerpt around the match."""
        needle = search.strip().lower()
        if not needle:
            return sorted(self._docs, key=lambda d: not d.pinned)
        found = [
            replace(d, found=excerpt_of(d, needle) or ())
            for d in self._docs
            if needle in d.visible_text().lower()
        ]
        return sorted(found, key=lambda d: not d.pinned)


def excerpt_of(doc: ChatDoc, needle: str) -> Excerpt | None:
    """The excerpt around `needle` in `doc`: what the user wrote or a visible reply first, then
    the title, then an attached document's text (marked 📎); never analysis."""
    contexts: list[str] = []
    for turn in doc.turns:
        context, own = attachments.split(turn.version.user_text)
        contexts.append(context)
        reply = turn.version.reply
        for text in (own, reply.visible_text() if reply is not None else ""):
            if (found := excerpt(text, [needle])) is not None:
                return found
    if (found := excerpt(doc.title, [needle])) is not None:
        return found
    for context in contexts:
        if (found := attached_excerpt(context, [needle])) is not None:
            return found
    return None


__all__ = [
    "ChatDoc",
    "ConversationList",
    "DebugRecord",
    "Reply",
    "Segment",
    "Turn",
    "Version",
    "excerpt_of",
    "snippet",
]
