"""Compaction under the summarise policy: when a conversation's prompt passes the threshold, its
older exchanges are summarised by the model and stand in the prompt as that summary.

Guarantees: `prompt_of` is what a turn under summarise sends (the conversation with the latest
compaction laid over it, `app/domain/compaction.py`); `compact` decides (`plan`) and makes one:
it compacts when the prompt with the answer's reserve passes `compact_at` of the context (or
when asked, `force`), keeping verbatim the header (instructions, tools) and the most recent
exchanges that fit in `keep_recent` of the room (asked for: of the history there is; at least
the one being answered), and
summarising the rest — a compaction already made is extended (its summary and the exchanges
after it, summarised again into one), never redone each turn. The summary is written by the
conversation's own model in a generation of its own (no tools, low effort, greedy, its events
not shown): only the text of its answer is kept, never the analysis of a Harmony model; each
tool result and document in what it reads is cut to `TOOL_SHARE` characters with a visible
marker. What it says: `Compacting` before, `Compacted` with the record after; a summary that
fails (the model failed, wrote nothing, or was stopped) makes no compaction and says why in a
`ParseIssue`, and the turn goes on under the drop-middle rules.
Ahead (`ahead`, after an answer, for the doors with a person between turns): it compacts when
the next turn would pass the threshold — the prompt now, the reserve and one more exchange the
size of the last — so that turn does not wait for a summary; the compacted prompt is then read
once (`warm`: one token generated and dropped, its state kept as the conversation's), so the
next turn reuses it rather than reading it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace

from app.domain.budget import Overflow, reserve_for
from app.domain.compaction import (
    Compaction,
    applies,
    compacted,
    exchanges_of,
    fingerprint,
    header_of,
)
from app.domain.events import Compacted, Compacting, ParseIssue
from app.domain.messages import Conversation, Message, ReasoningEffort, Role, TextContent
from app.engine.request import GenerationRequest, SamplingAsk
from app.engine.session import ChatEvent, Generation, Session
from app.errors import ErrorCode

COMPACT_AT = 0.8  # the share of the context whose passing compacts
KEEP_RECENT = 0.4  # the share of the room the most recent exchanges keep verbatim
SUMMARY_TOKENS = 768  # the longest summary
SUMMARY_SHARE = 0.2  # of the room: a summary in a small context is shorter
# and at most half of what it newly stands for, so that it always saves room
TOOL_SHARE = 2000  # characters of one tool result or document a summary reads
ASK = (
    "Summarise the conversation above so that it can go on from your summary alone. Keep every"
    " fact the user stated (names, numbers, dates, preferences), the decisions made, the files,"
    " code and commands that matter, what each tool returned that was used, and what is still"
    " open. Write plain sentences or short bullets, in the conversation's language, with no"
    " preamble."
)


@dataclass(frozen=True)
class Plan:
    """What a compaction would cover: the messages after the header, the exchanges among them,
    the prompt's tokens before it, and the longest summary it may have."""

    covered: int
    exchanges: int
    tokens: int
    summary_tokens: int


def prompt_of(conversation: Conversation, compaction: Compaction | None) -> Conversation:
    """What a turn under summarise sends: the latest compaction laid over `conversation`."""
    return compacted(conversation, compaction)


def plan(
    session: Session,
    conversation: Conversation,
    request: GenerationRequest,
    compaction: Compaction | None,
    *,
    force: bool = False,
    ahead: bool = False,
) -> Plan | None:
    """The compaction to make now (None: none is due, or nothing more can be summarised);
    `ahead`: due if one more exchange like the last would pass the threshold."""
    view = prompt_of(conversation, compaction)
    tokens = session.prompt_size(view)
    n_ctx = session.n_ctx
    reserve = reserve_for(request.max_tokens or session.max_tokens, n_ctx)
    exchanges = exchanges_of(conversation)
    coming = _tokens(session, exchanges[-1]) if ahead and exchanges else 0
    if not force and tokens + reserve + coming <= request.compact_at * n_ctx:
        return None
    done = _covered_exchanges(conversation, compaction)
    header = session.prompt_size(Conversation(messages=tuple(header_of(conversation))))
    room = max(0, n_ctx - reserve - header)
    mass = min(room, tokens - header) if force else room  # asked for: a share of what there is
    keep, kept = request.keep_recent * mass, 0.0
    start = len(exchanges) - 1  # the exchange being answered stays
    kept += _tokens(session, exchanges[start])
    while start > done and kept + _tokens(session, exchanges[start - 1]) <= keep:
        start -= 1
        kept += _tokens(session, exchanges[start])
    if start <= done:
        return None
    summarised = sum(_tokens(session, e) for e in exchanges[done:start])
    longest = max(32, min(SUMMARY_TOKENS, int(room * SUMMARY_SHARE), summarised // 2))
    return Plan(sum(len(e) for e in exchanges[:start]), start, tokens, longest)


def _covered_exchanges(conversation: Conversation, compaction: Compaction | None) -> int:
    if compaction is None or not applies(conversation, compaction):
        return 0
    return compaction.exchanges


def _tokens(session: Session, exchange: Sequence[Message]) -> int:
    return sum(session.count(m.text) + 4 for m in exchange)


def compact(
    session: Session,
    conversation: Conversation,
    request: GenerationRequest,
    compaction: Compaction | None,
    cancel: threading.Event | None = None,
    *,
    force: bool = False,
    ahead: bool = False,
) -> Generator[ChatEvent | Compacting | Compacted, None, Compaction | None]:
    """Compact `conversation` if it is due (see the module guarantees): the compaction that
    holds for the turn (the new one, else `compaction`)."""
    planned = plan(session, conversation, request, compaction, force=force, ahead=ahead)
    if planned is None:
        return compaction
    yield Compacting(planned.exchanges, planned.tokens)
    head = len(header_of(conversation))
    covered = conversation.messages[head : head + planned.covered]
    holds = compaction is not None and applies(conversation, compaction)
    earlier = compaction.summary if compaction is not None and holds else ""
    since = compaction.covered if compaction is not None and holds else 0
    asked = _asked(earlier, covered[since:])  # the summary so far, and only what came after it
    summary, why = _summary(session, asked, request, planned.summary_tokens, cancel)
    made = _made(session, conversation, planned, covered, summary) if summary else None
    if made is None or made.tokens_after >= made.tokens_before:
        why = why or "the summary was no shorter than what it stood for"
        yield ParseIssue(ErrorCode.CONTEXT, f"The conversation was not compacted: {why}.")
        return compaction
    yield Compacted(made)
    return made


def _made(
    session: Session,
    conversation: Conversation,
    planned: Plan,
    covered: Sequence[Message],
    summary: str,
) -> Compaction:
    """The compaction `summary` makes of `planned`, with the prompt's size after it."""
    made = Compaction(
        summary=summary,
        covered=planned.covered,
        fingerprint=fingerprint(covered),
        exchanges=planned.exchanges,
        tokens_before=planned.tokens,
        tokens_after=0,
        created=time.time(),
    )
    return replace(made, tokens_after=session.prompt_size(prompt_of(conversation, made)))


def _asked(earlier: str, messages: Sequence[Message]) -> Conversation:
    """The summary's one user message: the summary so far, the transcript, then the request
    (last, where a small model heeds it)."""
    lines = []
    if earlier:
        lines += ["The summary so far (of what came before):", earlier.strip(), ""]
    lines += ["The conversation:", *(_line(m) for m in messages if _line(m)), "", ASK]
    return Conversation(messages=(Message.of(Role.USER, "\n".join(lines)),))


def _line(message: Message) -> str:
    """One message of the transcript a summary reads (analysis left out)."""
    if message.channel == "analysis":
        return ""
    role, text = message.author.role, message.text.strip()
    if message.recipient and message.recipient.startswith("functions."):
        return f"Assistant called {message.recipient.removeprefix('functions.')}: {_cut(text)}"
    if role is Role.TOOL:
        name = (message.author.name or "a tool").removeprefix("functions.")
        return f"{name} returned: {_cut(text)}"
    if role is Role.USER:
        return f"User: {_cut(text)}"
    if role is Role.ASSISTANT:
        return f"Assistant: {text}" if text else ""
    return ""


def _cut(text: str) -> str:
    if len(text) <= TOOL_SHARE:
        return text
    return text[:TOOL_SHARE] + f" […{len(text) - TOOL_SHARE:,} characters cut for the summary]"


def warm(
    session: Session,
    conversation: Conversation,
    compaction: Compaction,
    request: GenerationRequest,
    cancel: threading.Event | None,
) -> None:
    """Read the compacted prompt of `conversation` once, as the next turn will send it (the
    turn's tools, effort and format, which its prompt carries): one token generated and
    dropped, the state kept as the conversation's (`request.keep`)."""
    once = replace(
        request,
        max_tokens=1,
        sampling=SamplingAsk(temperature=0.0),
        tool_choice="auto",
        prefix=(),
        top_logprobs=0,
        overflow=Overflow.STOP,
        compaction=None,
        compact_now=False,
        compact_ahead=False,
    )
    _drained(session.generate(prompt_of(conversation, compaction), once, cancel))


def _drained(events: Generator[ChatEvent, None, Generation]) -> Generation:
    """The outcome of a generation whose events are not the turn's: none is passed on."""
    while True:
        try:
            next(events)
        except StopIteration as stop:
            done: Generation = stop.value
            return done


def _summary(
    session: Session,
    asked: Conversation,
    request: GenerationRequest,
    longest: int,
    cancel: threading.Event | None,
) -> tuple[str, str]:
    """The model's summary of `asked` (its answer's text only) and, when empty, why. Its
    state goes to the prompt cache, never in place of the conversation's kept ones."""
    summary = GenerationRequest(
        max_tokens=longest,
        effort=ReasoningEffort.LOW,
        sampling=SamplingAsk(temperature=0.0),
        tenant=request.tenant,
        reserved=request.reserved,
    )
    out = _drained(session.generate(asked, summary, cancel))
    if out.failed is not None:
        return "", f"the summary failed ({out.failed})"
    if cancel is not None and cancel.is_set():
        return "", "it was stopped"
    said = "".join(
        c.text
        for m in out.messages
        if m.author.role is Role.ASSISTANT and m.channel in (None, "final") and not m.recipient
        for c in m.content
        if isinstance(c, TextContent)
    ).strip()
    return (said, "") if said else ("", "the model wrote no summary")


__all__ = ["COMPACT_AT", "KEEP_RECENT", "Plan", "compact", "plan", "prompt_of", "warm"]
