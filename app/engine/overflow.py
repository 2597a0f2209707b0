"""A conversation fitted to the context under its overflow policy, counted by the model's own
tokenizer (or estimated, for a remote endpoint): what every session does before it generates.

Guarantees: `measure` splits a prompt into the budget's parts by rendering it — the whole
conversation, its header alone (the leading system and developer messages: the instructions,
the template's own wrapping included) and that header without its tools (the difference is the
tools' declaration) — and by counting the attached documents' text; the history is the rest, so
the parts add up to the prompt exactly. `fit` returns the conversation unchanged when its
prompt and the answer's reserve fit, and always under `Overflow.STOP` (the backend then refuses
a prompt the context cannot hold, with E-CONTEXT); under drop-middle or rolling it first cuts
each tool result or attached document larger than its share to that share, with a visible
marker, then leaves whole exchanges out of the prompt — an exchange is a user message and
everything up to the next one, so a tool call is never parted from its result — the oldest
first (after the first exchange, under drop-middle and under summarise, whose compacted
prompt carries its summary there: `app/engine/turn/compaction.py` summarises before this fits what
is left), never the last one (the turn being
answered), never the instructions or the tools. The overflow is quantized: the tokens by which
the prompt and the reserve exceed the context are rounded up to a whole multiple of the
`margin` (`MARGIN_SHARE` of the room the history has — the context less the reserve, the
instructions and the tools — and at least `MIN_MARGIN` tokens), and the fewest oldest
exchanges whose leaving out takes at least that many tokens off the prompt are left out (or all
it may drop). As the conversation grows by a turn its overflow grows but its rounded value
does not until the overflow crosses the next multiple, so the same exchanges are left out and
the kept prompt starts the same way turn after turn: the model's KV cache of it is reused, and
the prompt is read again from where exchanges were left out once per margin's worth of growth,
not on every turn (llama.cpp's context shift drops half the context at once for the same
reason). What it changed is said in the returned `ContextFit`; when even that does not fit, the
rest is sent as it is and refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.domain.attachments import compose, estimate, split
from app.domain.budget import Budget, Cut, Overflow, marker, reserve_for
from app.domain.events import ContextFit
from app.domain.instructions import header_length
from app.domain.messages import (
    Conversation,
    DeveloperContent,
    Message,
    Role,
    SystemContent,
    TextContent,
    content_to_dict,
)
from app.errors import HarmonyDeskError
from app.templates.base import Template, Tokenizer

_MEMO = 8  # header renders remembered (the header rarely changes from one turn to the next)

MARGIN_SHARE = 0.5  # the overflow is rounded up to a multiple of this share of the room
MIN_MARGIN = 64  # tokens: the least margin, however small the room


@dataclass
class Measure:
    """How one backend counts: a conversation's prompt tokens, a text's tokens, its context and
    the answer's reserve."""

    prompt: Callable[[Conversation], int]
    text: Callable[[str], int]
    n_ctx: int
    reserve: int
    estimated: bool = False
    _headers: dict[str, int] = field(default_factory=dict)

    def header(self, messages: Sequence[Message]) -> int:
        """The prompt tokens of `messages` alone (remembered; a template that cannot render a
        header alone is answered with its texts' count)."""
        key = json.dumps([m.to_dict() for m in messages], sort_keys=True)
        if key not in self._headers:
            try:
                self._headers[key] = self.prompt(Conversation(messages=tuple(messages)))
            except HarmonyDeskError:
                self._headers[key] = sum(self.text(_text_of(m)) for m in messages)
            while len(self._headers) > _MEMO:
                del self._headers[next(iter(self._headers))]
        return self._headers[key]

    def fits(self, conversation: Conversation) -> bool:
        return self.prompt(conversation) + self.reserve <= self.n_ctx


class PromptIds:
    """A template's prompt ids for a conversation; the last one is kept, so a generation sends
    the very ids its fit was measured on without rendering them again."""

    def __init__(self, template: Template, tokenizer: Tokenizer) -> None:
        self.template, self.tokenizer = template, tokenizer
        self._last: tuple[Conversation, list[int]] | None = None
        self.headers: dict[str, int] = {}  # header renders, kept across a session's fits
        self.image_tokens: dict[str, int] = {}  # sha256 → the tokens an image became, learned
        self.image_guess = 256  # for an image not read yet: the model's own figure once loaded

    def images(self, conversation: Conversation) -> int:
        """The tokens the conversation's images take beyond the one place each holds in the
        prompt ids (learned from the generations that read them, else `image_guess`)."""
        return sum(
            self.image_tokens.get(image.sha256, self.image_guess) - 1
            for m in conversation.messages
            for image in m.images
        )

    def __call__(self, conversation: Conversation) -> list[int]:
        if self._last is None or self._last[0] is not conversation:
            self._last = (conversation, self.template.prompt_ids(conversation, self.tokenizer))
        return self._last[1]


def model_measure(ids: PromptIds, n_ctx: int, max_tokens: int) -> Measure:
    """Counted by the model's own tokenizer, through its template."""
    tokenizer = ids.tokenizer
    return Measure(
        prompt=lambda c: len(ids(c)) + ids.images(c),
        text=lambda t: len(tokenizer.tokenize(t, special=False)),
        n_ctx=n_ctx,
        reserve=reserve_for(max_tokens, n_ctx),
        _headers=ids.headers,
    )


def estimated_measure(n_ctx: int, max_tokens: int) -> Measure:
    """Estimated at four characters a token (a remote endpoint's tokenizer is not ours)."""
    return Measure(
        estimated_prompt, estimate, n_ctx, reserve_for(max_tokens, n_ctx), estimated=True
    )


def estimated_prompt(conversation: Conversation) -> int:
    """About how many tokens a conversation is: its texts, its headers as JSON, and four tokens
    of wrapping per message."""
    return sum(estimate(_text_of(m)) + 4 for m in conversation.messages)


def _text_of(message: Message) -> str:
    return "".join(
        c.text if isinstance(c, TextContent) else json.dumps(content_to_dict(c))
        for c in message.content
    )


def measure(conversation: Conversation, m: Measure) -> Budget:
    """The budget of `conversation`'s prompt (see the module guarantees)."""
    whole = m.prompt(conversation)
    head = _header(conversation)
    instructions = m.header([_without_tools(h) for h in head])
    tools = max(0, m.header(head) - instructions) if any(map(_has_tools, head)) else 0
    documents = sum(m.text(split(x.text)[0]) for x in _user_messages(conversation))
    instructions = min(instructions, whole)
    tools = min(tools, whole - instructions)
    documents = min(documents, whole - instructions - tools)
    history = whole - instructions - tools - documents
    return Budget(m.n_ctx, instructions, tools, documents, history, m.reserve, m.estimated)


@dataclass(frozen=True)
class Fitted:
    """The conversation to prompt with, and what was done to make it fit."""

    conversation: Conversation
    event: ContextFit


def fit(conversation: Conversation, m: Measure, policy: Overflow) -> Fitted:
    """`conversation` fitted to the context under `policy` (see the module guarantees)."""
    budget = measure(conversation, m)
    if budget.fits or policy is Overflow.STOP:
        return Fitted(conversation, ContextFit(budget, policy))
    conversation, cuts = _cut(conversation, m, budget.share)
    head, exchanges = _header(conversation), _exchanges(conversation)
    first = 0 if policy is Overflow.ROLLING else 1  # summarise: the exchange with the summary
    droppable = len(exchanges) - 1 - first  # the last exchange is the turn being answered
    whole = m.prompt(conversation)
    over = whole + m.reserve - m.n_ctx
    if droppable <= 0 or over <= 0:
        return Fitted(conversation, ContextFit(measure(conversation, m), policy, cuts=cuts))

    def kept(k: int) -> Conversation:
        exchanges_kept = [*exchanges[:first], *exchanges[first + k :]]
        return Conversation(messages=(*head, *(x for e in exchanges_kept for x in e)))

    step = margin(budget)
    target = -(-over // step) * step  # whole margins: see the guarantees
    low, high = 1, droppable  # the fewest exchanges that take `target` off (or all of them)
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if whole - m.prompt(kept(mid)) >= target else (mid + 1, high)
    fitted = kept(low)
    dropped = sum(len(e) for e in exchanges[first : first + low])
    return Fitted(fitted, ContextFit(measure(fitted, m), policy, low, dropped, cuts))


def margin(budget: Budget) -> int:
    """The tokens a policy's overflow is rounded up to a multiple of (see the module
    guarantees): `MARGIN_SHARE` of the room, at least `MIN_MARGIN`. The room depends on the
    context, the reserve, the instructions and the tools alone, so it stays put as the
    conversation grows."""
    return max(MIN_MARGIN, int(budget.room * MARGIN_SHARE))


def kept_always(conversation: Conversation, policy: Overflow) -> Conversation:
    """What `policy` never leaves out of `conversation`: all of it under stop; the header (and
    the first exchange, under drop-middle) otherwise — the room a new message has."""
    if policy is Overflow.STOP:
        return conversation
    first = _exchanges(conversation)[:1] if policy is not Overflow.ROLLING else []
    kept = (*_header(conversation), *(m for e in first for m in e))
    return Conversation(messages=kept)


def _header(conversation: Conversation) -> list[Message]:
    """The leading system and developer messages."""
    return list(conversation.messages[: header_length(conversation)])


def _exchanges(conversation: Conversation) -> list[list[Message]]:
    """The messages after the header, one list per user message and what followed it."""
    out: list[list[Message]] = []
    for m in conversation.messages[len(_header(conversation)) :]:
        if m.author.role is Role.USER or not out:
            out.append([m])
        else:
            out[-1].append(m)
    return out


def _has_tools(message: Message) -> bool:
    return any(isinstance(c, SystemContent | DeveloperContent) and c.tools for c in message.content)


def _without_tools(message: Message) -> Message:
    if not _has_tools(message):
        return message
    content = tuple(
        c.model_copy(update={"tools": None})
        if isinstance(c, SystemContent | DeveloperContent)
        else c
        for c in message.content
    )
    return message.model_copy(update={"content": content})


def _user_messages(conversation: Conversation) -> list[Message]:
    return [m for m in conversation.messages if m.author.role is Role.USER]


def _cut(
    conversation: Conversation, m: Measure, share: int
) -> tuple[Conversation, tuple[Cut, ...]]:
    """Each tool result and attached document over `share` tokens cut to it, with a marker."""
    messages, cuts = list(conversation.messages), []
    for i, message in enumerate(messages):
        rest: str | None = None  # a message's own text after its documents
        if message.author.role is Role.TOOL:
            what = f"the result of {(message.author.name or 'a tool').removeprefix('functions.')}"
            body = message.text
        elif message.author.role is Role.USER and split(message.text)[0]:
            what = "the attached documents"
            body, rest = split(message.text)
        else:
            continue
        total = m.text(body)
        if total <= share:
            continue
        shortened, kept = _shortened(body, total, share, m)
        text = shortened if rest is None else compose(shortened, rest)
        messages[i] = message.model_copy(update={"content": (TextContent(text=text),)})
        cuts.append(Cut(what, kept, total))
    return Conversation(messages=tuple(messages)), tuple(cuts)


def _shortened(text: str, total: int, share: int, m: Measure) -> tuple[str, int]:
    """The start of `text` in at most `share` tokens, its marker included; its tokens kept."""
    room = max(0, share - m.text(marker(total, total)))
    chars = len(text) * room // max(1, total)
    for _ in range(8):  # the first guess is close: a few tries make it fit
        kept = m.text(text[:chars])
        if kept <= room:
            return text[:chars] + marker(total - kept, total), kept
        chars = int(chars * room / kept * 0.95)
    return marker(total, total), 0


__all__ = [
    "MARGIN_SHARE",
    "MIN_MARGIN",
    "Fitted",
    "Measure",
    "PromptIds",
    "estimated_measure",
    "estimated_prompt",
    "fit",
    "kept_always",
    "margin",
    "measure",
    "model_measure",
]
