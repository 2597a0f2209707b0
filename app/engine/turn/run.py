"""`run_turn`: the only turn driver. Every door — the window, the terminal chat, replay and each
API of the local server — asks for a turn with a `TurnRequest` (the generation's knobs in one
`GenerationRequest`) and folds the events it yields with the one reply builder.

Guarantees: the same request gives the same events whoever drives it: a local or a remote
session; with tools run here (the sans-I/O turn loop, approval, deadlines and the audit log
beside it) or with calls handed back unrun (`tools` None: what an API client needs — the calls
it declared come back as tool-call messages); in JSON mode (constraint and verdict) or not; a
fresh turn or the continuation of a cut answer (`generation.prefix`, under the same JSON mode);
the reasoning effort is recorded on the conversation as the model's format says. Tools chosen
for a model whose template has no tool-call format are said (an issue the reply shows; a failed
turn when `tool_choice` needs a call), never dropped silently; a continuation a session cannot
make fails saying so — the `tools` and `continues_prefix` capabilities are asked here and
nowhere else. The conversation's latest compaction (`generation.compaction`) lays its summary
over the prompt under any policy, until it is undone; under summarise (or when asked,
`compact_now`) one that is due is made first (`app/engine/turn/compaction.py`); asked to
(`compact_ahead`, the doors with a person between turns), one the next turn would need is made
after the answer — its events last — and its prompt read once where the session keeps it, so
the next turn neither waits for a summary nor reads the compacted prompt. An image a tool
returned earlier that is no longer kept here is a note in its tool message and an E-RESOURCE
notice (`tool_results.tool_images_found`), never a failed turn. When it returns,
`session.conversation` holds the turn, every message of it (a compaction changes the prompt
only). A turn that offers MCP servers' tools starts a new turn on the caps behind them
(`app.tools.mcp.caps.begin_turns`), so what the servers ask while it runs — sampling, requests
for input — counts toward this turn's cap, whichever door drives it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.domain.budget import Overflow
from app.domain.compaction import Compaction
from app.domain.events import ParseIssue, TurnEvent, TurnFailed
from app.domain.messages import Conversation, Message
from app.engine.request import GenerationRequest
from app.engine.session import Session, TurnRecord
from app.engine.turn.compaction import compact, prompt_of, warm
from app.engine.turn.tool_results import tool_images_found
from app.engine.turn.tools import run_tool_turn
from app.errors import ErrorCode
from app.tools.api import ToolContext
from app.tools.calls import Approve, allow_all
from app.tools.mcp.caps import begin_turns
from app.tools.registry import ToolRegistry


@dataclass(frozen=True)
class TurnRequest:
    """One turn, as any door asks for it (see the module guarantees)."""

    generation: GenerationRequest = field(default_factory=GenerationRequest)
    message: Message | None = None  # the user's message (None: answer `conversation` as it is)
    conversation: Conversation | None = None  # what the turn continues (None: the session's)
    tools: ToolRegistry | None = None  # run calls to these (None: calls come back unrun)
    approve: Approve = allow_all
    max_calls: int = 8
    context: ToolContext | None = None


def run_turn(
    session: Session, request: TurnRequest, cancel: threading.Event | None = None
) -> Iterator[TurnEvent]:
    """The turn's events, in order (see the module guarantees)."""
    generation = request.generation
    if request.tools is not None and len(request.tools) and not session.capabilities.tools:
        names = ", ".join(sorted(t.qualified_name for t in request.tools))
        said = f"This model's chat template has no tool-call format: its tools ({names}) were"
        if generation.tool_choice not in ("auto", "none"):
            reason = f"{said} not offered, and tool_choice {generation.tool_choice!r} needs a call."
            yield TurnFailed(reason, ErrorCode.TOOLS_UNAVAILABLE)
            return
        yield ParseIssue(ErrorCode.TOOLS_UNAVAILABLE, f"{said} not offered to it.")
        generation = dataclasses.replace(generation, tool_choice="auto")
        request = dataclasses.replace(request, tools=None, generation=generation)
    if generation.prefix and not session.capabilities.continues_prefix:
        reason = (
            f"continuing a cut answer from its tokens is not available with {session.name};"
            " regenerate it instead"
        )
        yield TurnFailed(reason, ErrorCode.INPUT_INVALID)
        return
    if request.tools is not None:
        begin_turns(request.tools)  # what MCP servers ask from now on counts toward this turn
    conversation = request.conversation or session.conversation
    if request.message is not None:
        conversation = conversation.with_message(request.message)
    conversation, lost = tool_images_found(conversation)  # a note for each image gone
    for said in lost:
        yield ParseIssue(ErrorCode.RESOURCE, said)
    held = generation.compaction  # applies under any policy, until it is undone
    if generation.overflow is Overflow.SUMMARISE or generation.compact_now:
        force = generation.compact_now
        held = yield from compact(session, conversation, generation, held, cancel, force=force)
    prompt = prompt_of(conversation, held)
    if request.tools is not None:
        yield from run_tool_turn(
            session,
            prompt,
            request.tools,
            generation,
            approve=request.approve,
            max_calls=request.max_calls,
            cancel=cancel,
            context=request.context,
        )
        session.conversation = _whole(conversation, prompt, session.conversation)
        yield from _ahead(session, generation, held, cancel)
        return
    out = yield from session.generate(prompt, generation, cancel)
    asked = out.conversation or prompt
    session.conversation = _whole(conversation, prompt, asked.with_messages(out.messages))
    if request.message is not None:
        index = len(conversation.messages) - 1
        session.turns.append(TurnRecord(index, generation.effort, out.timings, out.failed))
    if out.failed is None:
        yield from _ahead(session, generation, held, cancel)


def _ahead(
    session: Session,
    generation: GenerationRequest,
    held: Compaction | None,
    cancel: threading.Event | None,
) -> Iterator[TurnEvent]:
    """After the answer: the compaction the next turn would need, made now and read once."""
    if not generation.compact_ahead or generation.overflow is not Overflow.SUMMARISE:
        return
    if cancel is not None and cancel.is_set():
        return
    conversation = session.conversation
    made = yield from compact(session, conversation, generation, held, cancel, ahead=True)
    if made is not None and made is not held and session.capabilities.keeps_prompt:
        warm(session, conversation, made, generation, cancel)


def _whole(conversation: Conversation, prompt: Conversation, after: Conversation) -> Conversation:
    """What the turn leaves: `after` (the prompt and what the turn added), with the whole
    conversation in place of a compacted prompt — the messages stay; only the prompt changed."""
    if prompt is conversation:
        return after
    return conversation.with_messages(after.messages[len(prompt.messages) :])


__all__ = ["TurnRequest", "run_turn"]
